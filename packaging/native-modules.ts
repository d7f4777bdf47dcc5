/**
 * The packages the bundle leaves outside (bundle.ts), copied into a release's
 * node_modules with the packages they load at run time, at the same relative paths as in
 * the project's node_modules so that Node resolves them the same way. Native code is for
 * the release's architecture: serialport's prebuilt binaries for it, nothing compiled here
 * (the journal uses Node's own node:sqlite, agent/journal.ts). Every `.node` file is
 * checked to be an ELF object for the architecture.
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { Arch } from './manifest.js';

const PackageJson = z.object({
  name: z.string(),
  version: z.string(),
  dependencies: z.record(z.string(), z.string()).optional(),
});

export class NativeModuleMissing extends Error {}

/** Per package: its files (relative paths; folders end in /) and its install-time dependencies. */
interface PackageRule {
  keep?: (arch: Arch) => string[];
  buildOnlyDependencies?: string[];
}

/** ELF e_machine: x86-64 and AArch64. */
export const ELF_MACHINE: Record<Arch, number> = { 'linux-x64': 62, 'linux-arm64': 183 };

const RULES: Record<string, PackageRule> = {
  '@serialport/bindings-cpp': {
    keep: (arch) => ['package.json', 'LICENSE', 'dist/', `prebuilds/${arch}/`],
    buildOnlyDependencies: ['node-addon-api'],
  },
};

/** What a package needs at run time: code, data and its licence; not docs, types or tests. */
const RUNTIME_FILE = /\.(?:js|cjs|mjs|json|node)$|^(?:LICEN[CS]E|COPYING)/i;
const SKIPPED_FOLDER = new Set(['node_modules', 'test', 'tests', '__tests__', 'docs', '.github']);

function packageDir(root: string, name: string, from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', name);
    if (fs.existsSync(path.join(candidate, 'package.json'))) return candidate;
    if (dir === root || path.dirname(dir) === dir) {
      throw new NativeModuleMissing(`package ${name} (needed from ${from}) is not installed`);
    }
  }
}

function copyTree(from: string, to: string, keep: (relative: string) => boolean): void {
  const walk = (relative: string) => {
    for (const entry of fs.readdirSync(path.join(from, relative), { withFileTypes: true })) {
      const rel = relative ? `${relative}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (!SKIPPED_FOLDER.has(entry.name)) walk(rel);
      } else if (entry.isFile() && keep(rel)) {
        fs.mkdirSync(path.dirname(path.join(to, rel)), { recursive: true });
        fs.copyFileSync(path.join(from, rel), path.join(to, rel));
      }
    }
  };
  walk('');
}

export function elfMachine(file: string): number | undefined {
  const header = Buffer.alloc(20);
  const fd = fs.openSync(file, 'r');
  try {
    fs.readSync(fd, header, 0, 20, 0);
  } finally {
    fs.closeSync(fd);
  }
  if (header.readUInt32BE(0) !== 0x7f454c46) return undefined;
  return header.readUInt16LE(18);
}

function nodeFiles(dir: string): string[] {
  return fs
    .readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.node'))
    .map((file) => path.join(dir, file));
}

export interface NativeModulesOptions {
  root: string;
  arch: Arch;
  /** The release folder; packages go to its node_modules. */
  release: string;
  packages: string[];
}

/** Copies `packages` and what they load into the release; returns the package names copied. */
export async function copyNativeModules(options: NativeModulesOptions): Promise<string[]> {
  const { root, arch, release } = options;
  const copied = new Map<string, string>(); // package dir in the project → its name
  const visit = (name: string, from: string) => {
    const dir = packageDir(root, name, from);
    if (copied.has(dir)) return;
    const pkg = PackageJson.parse(
      JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')),
    );
    copied.set(dir, pkg.name);
    const rule = RULES[pkg.name] ?? {};
    const kept = rule.keep?.(arch);
    const target = path.join(release, path.relative(root, dir));
    copyTree(dir, target, (rel) =>
      kept
        ? kept.some((k) => (k.endsWith('/') ? rel.startsWith(k) : rel === k))
        : RUNTIME_FILE.test(path.basename(rel)),
    );
    for (const dependency of Object.keys(pkg.dependencies ?? {})) {
      if (!rule.buildOnlyDependencies?.includes(dependency)) visit(dependency, dir);
    }
  };
  for (const name of options.packages) visit(name, root);

  const wrong = nodeFiles(path.join(release, 'node_modules')).filter(
    (file) => elfMachine(file) !== ELF_MACHINE[arch],
  );
  if (wrong.length > 0) {
    throw new NativeModuleMissing(
      `native code for another architecture than ${arch}:\n  ${wrong.join('\n  ')}`,
    );
  }
  return [...new Set(copied.values())].sort();
}
