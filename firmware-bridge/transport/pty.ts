/**
 * A pseudo-terminal pair for the emulated firmware: the emulator keeps one end, and the
 * other end is a device path (`/dev/pts/4`) that the agent and the bench tools open like a
 * real serial port. POSIX only.
 *
 * Two backends, tried in this order unless one is asked for:
 * - `node-pty`: `@lydell/node-pty` (node-pty with prebuilt binaries, no install script),
 *   whose `open()` makes a pair without spawning a process; the line is set raw.
 * - `socat`: `socat pty,raw,echo=0 pty,raw,echo=0`, when the socat program is installed
 *   (for platforms node-pty ships no binary for).
 */
import type { PtyBackend, PtyPair } from './pty-pair.js';

export type { PtyBackend, PtyPair } from './pty-pair.js';

export interface PtyOptions {
  /** Use only this backend (default: node-pty, then socat). */
  backend?: PtyBackend;
}

export async function openPty(options: PtyOptions = {}): Promise<PtyPair> {
  const backends: PtyBackend[] = options.backend ? [options.backend] : ['node-pty', 'socat'];
  const failures: string[] = [];
  for (const backend of backends) {
    try {
      return backend === 'node-pty'
        ? (await import('./pty-node.js')).openNodePty()
        : await (await import('./pty-socat.js')).openSocatPty();
    } catch (error) {
      failures.push(`${backend}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  throw new Error(`cannot create a pseudo-terminal (${failures.join('; ')})`);
}

/** Whether a pty can be made here, and if not why: for tests that skip with a reason. */
export async function ptySupport(
  options: PtyOptions = {},
): Promise<{ ok: true; backend: PtyBackend } | { ok: false; reason: string }> {
  try {
    const pty = await openPty(options);
    await pty.close();
    return { ok: true, backend: pty.backend };
  } catch (error) {
    return { ok: false, reason: error instanceof Error ? error.message : String(error) };
  }
}
