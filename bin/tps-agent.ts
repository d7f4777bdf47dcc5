#!/usr/bin/env node
/**
 * `tps-agent`: the agent alone, as a release runs it (`node bin/tps-agent.js …`, docs/fleet.md,
 * "Releases"): `--config FILE`, `doctor`, `pair`, `--version`. The packager bundles this
 * file; nothing of the relay is reachable from it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { RELEASE_MANIFEST_FILE, ReleaseManifest } from '../protocol/release.js';

/**
 * In a release, the Node.js major versions its native modules were built for; undefined
 * when run from the sources or dist/, which use the project's own node_modules.
 */
function releaseNodeMajors(): string[] | undefined {
  const file = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', RELEASE_MANIFEST_FILE);
  if (!fs.existsSync(file)) return undefined;
  const manifest = ReleaseManifest.safeParse(JSON.parse(fs.readFileSync(file, 'utf8')));
  return manifest.success ? manifest.data.node_abi : undefined;
}

async function main(argv: string[]): Promise<void> {
  if (argv[0] === '--version' || argv[0] === '-V' || argv[0] === 'version') {
    process.stdout.write(`tps-agent ${(await import('../common/version.js')).VERSION}\n`);
    return;
  }
  const majors = releaseNodeMajors();
  const major = process.versions.node.split('.')[0]!;
  if (majors && !majors.includes(major)) {
    // Checked before the native modules load: their own error names an ABI number only.
    process.stderr.write(
      `tps-agent: this release is built for Node.js ${majors.join(', ')}; this is Node.js ${process.versions.node}\n`,
    );
    process.exitCode = 3;
    return;
  }
  // Loaded after the check: the agent's modules pull in the native ones.
  await (await import('../agent/cli.js')).runAgent(argv, 'tps-agent');
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`tps-agent: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
