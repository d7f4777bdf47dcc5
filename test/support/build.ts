/**
 * Vitest's global set-up: builds `dist/` (incremental, so a second run with nothing
 * changed takes a second or two) before any test runs. Tests start `tps` from the build,
 * as a user does after `npm run build`: a process started through tsx transpiles the
 * sources as it loads them, two to three times the CPU of the built start, and on a
 * loaded machine a test spawning a few at once ran past its time-out on that alone.
 */
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { repoRoot } from './tps-command.js';

export default function setup(): void {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], {
    cwd: repoRoot,
    stdio: 'inherit',
  });
}
