/** How tests start the `tps` command: the built one (test/support/build.ts builds it). */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The arguments for `process.execPath` that run `tps ARGS…`. */
export function tpsArgv(args: string[]): string[] {
  return [path.join(repoRoot, 'dist/bin/tps.js'), ...args];
}
