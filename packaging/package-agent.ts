/**
 * `npm run package:agent`: the agent's releases, one per architecture (docs/agent.md,
 * "Packaging a release"; the format in docs/fleet.md, "Releases"). Each is a folder, its
 * archive `tps-agent-<version>-<arch>.tar.gz` and a `.deb`, and brings its own Node.js
 * (runtime.ts). Each is built in a temporary folder beside them and renamed into place at
 * the end: a failed build leaves the previous output or nothing, never half a release.
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
import { RELEASE_WRAPPER_FILE, loadSigningKey, writeManifest, type Arch } from './manifest.js';
import { copyNativeModules } from './native-modules.js';
import { NODE_RUNTIME_MAJOR, NODE_RUNTIME_VERSION, copyRuntime } from './runtime.js';

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
  const work = fs.mkdtempSync(path.join(options.outDir, `.${name}.partial-`));
  try {
    const built = await buildInto(work, name, options, arch, privateKeyPem, log);
    // Everything built: now, and only now, it takes the place of what was there.
    const final = (file: string) => path.join(options.outDir, path.basename(file));
    fs.rmSync(final(built.folder), { recursive: true, force: true });
    fs.renameSync(built.folder, final(built.folder));
    fs.renameSync(built.archive, final(built.archive));
    if (built.deb) fs.renameSync(built.deb, final(built.deb));
    return {
      ...built,
      folder: final(built.folder),
      archive: final(built.archive),
      ...(built.deb ? { deb: final(built.deb) } : {}),
    };
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

async function buildInto(
  work: string,
  name: string,
  options: PackageOptions,
  arch: Arch,
  privateKeyPem: string,
  log: (line: string) => void,
): Promise<BuiltRelease> {
  const folder = path.join(work, name);
  fs.mkdirSync(folder, { recursive: true });
  const cacheDir = path.join(ROOT, '.tps/packaging-cache');

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
  });
  log(`${arch}: node_modules: ${packages.join(', ')}`);
  await copyRuntime(arch, folder, cacheDir);
  log(`${arch}: runtime/node: Node.js ${NODE_RUNTIME_VERSION}`);
  // `name` and `version` are what common/version.ts reads: `tps-agent --version`, presence.
  const packageJson = {
    name: 'terminal-payment-service',
    version: options.version,
    private: true,
    type: 'module',
    description: 'tps-agent release (docs/fleet.md, "Releases")',
  };
  fs.writeFileSync(path.join(folder, 'package.json'), `${JSON.stringify(packageJson, null, 2)}\n`);
  // `tps-agent` itself: this release's agent on this release's Node.js, wherever it lies.
  fs.writeFileSync(
    path.join(folder, RELEASE_WRAPPER_FILE),
    [
      '#!/bin/sh',
      "# tps-agent: this release's agent on its own Node.js (docs/install.md).",
      'here=$(dirname "$(readlink -f "$0")")',
      'exec "$here/../runtime/node" "$here/tps-agent.js" "$@"',
      '',
    ].join('\n'),
  );
  fs.mkdirSync(path.join(folder, 'systemd'));
  fs.copyFileSync(
    path.join(ROOT, 'agent/systemd/tps-agent.service'),
    path.join(folder, 'systemd/tps-agent.service'),
  );

  const manifest = writeManifest({
    folder,
    version: options.version,
    arch,
    nodeMajors: [NODE_RUNTIME_MAJOR],
    privateKeyPem,
    now: options.now ?? new Date(),
  });
  const archive = path.join(work, archiveName(options.version, arch));
  await createTar({ gzip: true, portable: true, cwd: folder, file: archive }, [
    RELEASE_MANIFEST_FILE,
    RELEASE_SIGNATURE_FILE,
    ...manifest.files.map((file) => file.path),
  ]);
  log(`${arch}: ${path.basename(archive)} (${manifest.files.length} files)`);
  const built: BuiltRelease = { arch, folder, archive, manifest };
  if (options.deb !== false) {
    built.deb = path.join(work, debFileName(options.version, arch));
    await buildDeb({ release: folder, version: options.version, arch, outFile: built.deb });
    log(`${arch}: ${path.basename(built.deb)}`);
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
