/**
 * Stock Debian 12 roots for the agent's install tests: made once with debootstrap from
 * Debian's mirror and kept as a tar under /var/cache/tps-test, then unpacked per run.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export const DEBIAN_MIRROR = 'http://deb.debian.org/debian';

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end, collecting what it printed; a failure to start is code -1. */
export function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env) {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const done = new Promise<Run>((resolve) => {
    child.once('error', (error) => resolve({ code: -1, stdout, stderr: String(error) }));
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
  return { child, done };
}

export const onPath = (command: string) =>
  (process.env.PATH ?? '')
    .split(':')
    .some((dir) => dir !== '' && fs.existsSync(path.join(dir, command)));

export async function mirrorReachable(): Promise<boolean> {
  try {
    const response = await fetch(`${DEBIAN_MIRROR}/dists/bookworm/Release`, {
      method: 'HEAD',
      signal: AbortSignal.timeout(5000),
    });
    return response.ok;
  } catch {
    return false;
  }
}

/**
 * The cached root at `cache`, made once: `debootstrap OPTIONS bookworm DIR MIRROR`, then a
 * tar renamed into place, so a run cut short leaves no half-made cache.
 */
export async function debootstrapTar(cache: string, options: string[]): Promise<string> {
  if (fs.existsSync(cache)) return cache;
  fs.mkdirSync(path.dirname(cache), { recursive: true });
  const build = fs.mkdtempSync(`${cache}.build-`);
  // mkdtemp makes it 0700, and tar keeps that for `.`: a root whose `/` only root may
  // enter, where the agent's user cannot load libc.
  fs.chmodSync(build, 0o755);
  try {
    const strap = await run('debootstrap', [...options, 'bookworm', build, DEBIAN_MIRROR]).done;
    if (strap.code !== 0) throw new Error(`debootstrap failed: ${strap.stderr || strap.stdout}`);
    const packed = await run('tar', ['-C', build, '-cf', `${build}.tar`, '.']).done;
    if (packed.code !== 0) throw new Error(`tar failed: ${packed.stderr}`);
    fs.renameSync(`${build}.tar`, cache);
  } finally {
    fs.rmSync(build, { recursive: true, force: true });
    fs.rmSync(`${build}.tar`, { force: true });
  }
  return cache;
}
