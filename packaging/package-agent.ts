/**
 * `npm run package:agent`: the agent's releases, one per architecture (docs/agent.md,
 * "Packaging a release"; the format in docs/fleet.md, "Releases"). Each is a folder, its
 * archive `tps-agent-<version>-<arch>.tar.gz` and a `.deb`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { create as createTar } from 'tar';
import { z } from 'zod';
import {
  RELEASE_MANIFEST_FILE,
  RELEASE_SIGNATURE_FILE,
  ReleaseArch,
  ReleaseVersion,
  type ReleaseManifest,
} from '../protocol/release.js';
import { EXTERNAL_PACKAGES, bundleAgent } from './bundle.js';
import { LAUNCHER_FILE, buildDeb, debFileName } from './deb.js';
import { loadSigningKey, writeManifest, type Arch } from './manifest.js';
import { copyNativeModules } from './native-modules.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export interface PackageOptions {
  version: string;
  arches: Arch[];
  outDir: string;
  /** ed25519 private key (PKCS#8 PEM); undefined: the development key in .tps/. */
  keyFile?: string;
  /** Skip the .deb (dpkg-deb missing, or not wanted). */
  deb?: boolean;
  now?: Date;
  log?: (line: string) => void;
}

export interface BuiltRelease {
  arch: Arch;
  folder: string;
  archive: string;
  deb?: string;
  manifest: ReleaseManifest;
}

export function archiveName(version: string, arch: Arch): string {
  return `tps-agent-${version}-${arch}.tar.gz`;
}

const ProjectPackage = z.object({ version: ReleaseVersion });

export function projectVersion(): string {
  return ProjectPackage.parse(JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')))
    .version;
}

async function packageOne(
  options: PackageOptions,
  arch: Arch,
  privateKeyPem: string,
  log: (line: string) => void,
): Promise<BuiltRelease> {
  const name = `tps-agent-${options.version}-${arch}`;
  const folder = path.join(options.outDir, name);
  fs.rmSync(folder, { recursive: true, force: true });
  fs.mkdirSync(folder, { recursive: true });

  const { inputs } = await bundleAgent(ROOT, path.join(folder, 'bin/tps-agent.js'));
  log(`${arch}: bundled ${inputs.length} files, no relay code`);
  // The launcher travels with each release; the .deb installs it outside them (deb.ts).
  await bundleAgent(
    ROOT,
    path.join(folder, LAUNCHER_FILE),
    path.join(ROOT, 'bin/tps-agent-launcher.ts'),
  );
  const packages = await copyNativeModules({
    root: ROOT,
    arch,
    release: folder,
    packages: EXTERNAL_PACKAGES,
    cacheDir: path.join(ROOT, '.tps/packaging-cache'),
    log,
  });
  log(`${arch}: node_modules: ${packages.join(', ')}`);
  // `name` and `version` are what common/version.ts reads: `tps-agent --version`, presence.
  const packageJson = {
    name: 'terminal-payment-service',
    version: options.version,
    private: true,
    type: 'module',
    description: 'tps-agent release (docs/fleet.md, "Releases")',
  };
  fs.writeFileSync(path.join(folder, 'package.json'), `${JSON.stringify(packageJson, null, 2)}\n`);
  fs.mkdirSync(path.join(folder, 'systemd'));
  fs.copyFileSync(
    path.join(ROOT, 'agent/systemd/tps-agent.service'),
    path.join(folder, 'systemd/tps-agent.service'),
  );

  const nodeMajor = process.versions.node.split('.')[0]!;
  const manifest = writeManifest({
    folder,
    version: options.version,
    arch,
    nodeMajors: [nodeMajor],
    privateKeyPem,
    now: options.now ?? new Date(),
  });
  const archive = path.join(options.outDir, archiveName(options.version, arch));
  await createTar({ gzip: true, portable: true, cwd: folder, file: archive }, [
    RELEASE_MANIFEST_FILE,
    RELEASE_SIGNATURE_FILE,
    ...manifest.files.map((file) => file.path),
  ]);
  log(`${arch}: ${path.relative(process.cwd(), archive)} (${manifest.files.length} files)`);
  const built: BuiltRelease = { arch, folder, archive, manifest };
  if (options.deb !== false) {
    built.deb = path.join(options.outDir, debFileName(options.version, arch));
    await buildDeb({
      release: folder,
      version: options.version,
      arch,
      nodeMajor,
      outFile: built.deb,
    });
    log(`${arch}: ${path.relative(process.cwd(), built.deb)}`);
  }
  return built;
}

export async function packageAgent(options: PackageOptions): Promise<BuiltRelease[]> {
  const log = options.log ?? (() => undefined);
  const key = loadSigningKey(options.keyFile, path.join(ROOT, '.tps'));
  if (key.development) {
    log(
      `warning: signed with the development key ${path.relative(process.cwd(), key.file)}; agents trust it only if their config names its public half (--key FILE or TPS_RELEASE_KEY for a real release)`,
    );
  }
  fs.mkdirSync(options.outDir, { recursive: true });
  const built: BuiltRelease[] = [];
  for (const arch of options.arches)
    built.push(await packageOne(options, arch, key.privateKeyPem, log));
  return built;
}

const USAGE = `Usage: npm run package:agent -- [options]

Builds the agent's release for each architecture: a folder, tps-agent-<version>-<arch>.tar.gz
and a .deb, in --out (docs/agent.md, "Packaging a release").

  --arch ARCH      linux-x64 or linux-arm64; repeat for both (default: both)
  --version V      the release's version (default: package.json's)
  --key FILE       the ed25519 signing key, PKCS#8 PEM (default: TPS_RELEASE_KEY, else a
                   development key made in .tps/, with a warning)
  --out DIR        where to write (default dist/releases)
  --no-deb         skip the .deb
  -h, --help       this text
`;

async function main(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      arch: { type: 'string', multiple: true },
      version: { type: 'string' },
      key: { type: 'string' },
      out: { type: 'string' },
      'no-deb': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(USAGE);
    return;
  }
  const arches = z.array(ReleaseArch).parse(values.arch ?? ReleaseArch.options);
  const version = ReleaseVersion.parse(values.version ?? projectVersion());
  const keyFile = values.key ?? process.env.TPS_RELEASE_KEY;
  const built = await packageAgent({
    version,
    arches,
    outDir: path.resolve(values.out ?? path.join(ROOT, 'dist/releases')),
    ...(keyFile ? { keyFile } : {}),
    deb: !values['no-deb'],
    log: (line) => process.stderr.write(`package:agent: ${line}\n`),
  });
  for (const release of built) {
    process.stdout.write(`${release.archive}\n${release.deb ? `${release.deb}\n` : ''}`);
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(
      `package:agent: ${error instanceof z.ZodError ? z.prettifyError(error) : error instanceof Error ? error.message : String(error)}\n`,
    );
    process.exitCode = 1;
  });
}
