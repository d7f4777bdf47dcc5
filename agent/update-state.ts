/**
 * The updater's state file, `<root>/update-state.json`: the one record of how far an
 * update got, written before each step that changes what runs (docs/fleet.md, "The
 * updater"). Written whole or not at all: a temporary file, fsync, rename, fsync of the
 * directory, so a power loss leaves the old state or the new one.
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { ReleaseVersion, UpdateOrderId, UpdateOutcome } from '../protocol/index.js';

const Switch = {
  order_id: UpdateOrderId,
  from: ReleaseVersion,
  to: ReleaseVersion,
};

/** Members a newer release adds are tolerated: an older release may read its state after a roll-back. */
export const UpdateState = z.discriminatedUnion('phase', [
  /** Nothing under way; `last` is how the last order ended. */
  z.object({ phase: z.literal('idle'), last: UpdateOutcome.optional() }),
  /** About to move `current` from `from` to `to`. */
  z.object({ phase: z.literal('switching'), ...Switch }),
  /** `current` is `to`; it has `boots` starts to prove itself healthy. */
  z.object({
    phase: z.literal('trial'),
    ...Switch,
    boots: z.int().min(0),
    /** Why the last start could not even load the release (the launcher records it). */
    start_error: z.string().max(500).optional(),
  }),
  /** `to` failed; `current` goes back to `from`. */
  z.object({ phase: z.literal('rolling_back'), ...Switch, reason: z.string().max(500) }),
]);
export type UpdateState = z.infer<typeof UpdateState>;

export const STATE_FILE = 'update-state.json';

/** The state; idle when there is none. A file that cannot be read as one is taken as idle too. */
export function readUpdateState(root: string): UpdateState {
  let text: string;
  try {
    text = fs.readFileSync(path.join(root, STATE_FILE), 'utf8');
  } catch {
    return { phase: 'idle' };
  }
  try {
    const parsed = UpdateState.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : { phase: 'idle' };
  } catch {
    return { phase: 'idle' };
  }
}

export function writeUpdateState(root: string, state: UpdateState): void {
  writeFileDurably(path.join(root, STATE_FILE), `${JSON.stringify(state)}\n`);
}

/** Temporary file, fsync, rename over the target, fsync of the directory. */
export function writeFileDurably(file: string, text: string): void {
  const temporary = `${file}.tmp`;
  const fd = fs.openSync(temporary, 'w', 0o600);
  try {
    fs.writeSync(fd, text);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(temporary, file);
  syncDirectory(path.dirname(file));
}

export function syncDirectory(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Tests only: `TPS_TEST_UPDATE_KILL_AT=<step>:<marker file>` kills this process with SIGKILL
 * at that step, once (the marker records that it happened), as a power loss would.
 */
export function stepReached(step: string): void {
  const setting = process.env.TPS_TEST_UPDATE_KILL_AT;
  if (!setting) return;
  const colon = setting.indexOf(':');
  if (setting.slice(0, colon) !== step) return;
  const marker = setting.slice(colon + 1);
  try {
    fs.writeFileSync(marker, step, { flag: 'wx' });
  } catch {
    return; // killed here once already
  }
  process.kill(process.pid, 'SIGKILL');
}
