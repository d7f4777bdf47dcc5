/**
 * `tps …` as a person runs it, for the tests of the bench tools: each command a process of
 * its own, started from the build as after `npm run build` (vitest's global set-up builds
 * it). Long-running ones are killed after each test.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

export function tps(args: string[]): ChildProcess {
  return spawn(process.execPath, [path.join(root, 'dist/bin/tps.js'), ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Runs a command to its end. */
export async function run(
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = tps(args);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  return { code, stdout, stderr };
}

const running: ChildProcess[] = [];

/** Kills what start() started and is still running (call it in afterEach). */
export function killStarted(): void {
  for (const child of running.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
}

/**
 * Starts a long-running command and resolves with the first line it prints on stdout (a
 * device path, an address); `output()` is all of its stdout so far.
 */
export async function start(
  args: string[],
): Promise<{ child: ChildProcess; firstLine: string; output: () => string; errors: () => string }> {
  const child = tps(args);
  running.push(child);
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const firstLine = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const line = stdout.split('\n')[0];
      if (stdout.includes('\n') && line) resolve(line);
    });
    child.once('close', (code) => reject(new Error(`${args[0]} exited ${code}: ${stderr}`)));
  });
  return { child, firstLine, output: () => stdout, errors: () => stderr };
}

export const exited = (child: ChildProcess): Promise<number | null> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.once('close', resolve);
  });
