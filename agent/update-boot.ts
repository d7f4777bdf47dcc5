/**
 * What the agent does with a half-done update when it starts (docs/fleet.md, "The
 * updater"), before it opens anything else. The state file says how far the update got,
 * `current` says what runs; together they decide:
 *
 * | state          | `current` is | then                                                        |
 * | -------------- | ------------ | ----------------------------------------------------------- |
 * | switching      | from         | the switch never happened: undone, the update failed       |
 * | switching      | to           | the switch happened: a trial of `to`                        |
 * | trial          | to           | another start of the trial; past MAX_TRIAL_BOOTS, roll back |
 * | rolling_back   | to           | finish the roll-back: `current` back to from, restart       |
 * | trial, rolling_back | from    | the roll-back is done: idle, rolled back                    |
 *
 * Leftovers in incoming/ are removed: a download or an unpacked copy is never trusted
 * across a restart.
 */
import { printable } from '../common/terminal-text.js';
import type { UpdateOutcome } from '../protocol/index.js';
import { clearIncoming, currentVersion, switchCurrent } from './update-release.js';
import {
  readUpdateState,
  stepReached,
  writeUpdateState,
  type UpdateState,
} from './update-state.js';

/** The exit code that asks the supervisor (systemd's Restart=) to start `current` again. */
export const RESTART_EXIT_CODE = 75;

/**
 * Set by the launcher (bin/tps-agent-launcher.ts) to the update root whose start it resolved
 * before loading the release: the release reads the decision there and does not count the
 * boot again. Another root (a config whose update.root is elsewhere) is resolved as before.
 */
export const BOOT_RESOLVED_ENV = 'TPS_UPDATE_BOOT_RESOLVED';

/** Starts a release gets to prove itself healthy; a release that crashes keeps failing. */
export const MAX_TRIAL_BOOTS = 3;

export type Trial = Extract<UpdateState, { phase: 'trial' }>;

export type BootDecision =
  /** Run; `trial` when this start is a new release's trial. */
  | { restart: false; running: string | undefined; trial?: Trial }
  /** `current` was switched back: exit, so that the supervisor starts the release before. */
  | { restart: true; reason: string };

export function resolveUpdateAtBoot(root: string, now: () => Date): BootDecision {
  clearIncoming(root);
  const running = currentVersion(root);
  const state = readUpdateState(root);
  const finished = (outcome: Omit<UpdateOutcome, 'at'>): BootDecision => {
    const reason =
      outcome.reason === undefined ? {} : { reason: printable(outcome.reason).slice(0, 500) };
    writeUpdateState(root, {
      phase: 'idle',
      last: { ...outcome, ...reason, at: now().toISOString() },
    });
    return { restart: false, running };
  };
  switch (state.phase) {
    case 'idle':
      return { restart: false, running };
    case 'switching': {
      const { order_id, to } = state;
      if (running !== to) {
        return finished({
          order_id,
          version: to,
          result: 'failed',
          reason: 'interrupted before the switch; the release before runs',
        });
      }
      return startTrial(root, { ...state, phase: 'trial', boots: 0 });
    }
    case 'trial':
      if (running !== state.to) {
        return finished({
          order_id: state.order_id,
          version: state.to,
          result: 'rolled_back',
          reason: 'the release before was found running during the trial',
        });
      }
      return startTrial(root, state);
    case 'rolling_back': {
      const { order_id, to, from, reason } = state;
      if (running === to) return rollBack(root, state, now);
      if (running !== from) return { restart: false, running };
      return finished({ order_id, version: to, result: 'rolled_back', reason });
    }
  }
}

function startTrial(root: string, trial: Trial): BootDecision {
  const boots = trial.boots + 1;
  if (boots > MAX_TRIAL_BOOTS) {
    const { order_id, from, to, start_error } = trial;
    const rolling = {
      phase: 'rolling_back' as const,
      order_id,
      from,
      to,
      reason: start_error
        ? `the release did not start (${MAX_TRIAL_BOOTS} tries): ${start_error}`.slice(0, 500)
        : `did not prove healthy in ${MAX_TRIAL_BOOTS} starts`,
    };
    writeUpdateState(root, rolling);
    return rollBack(root, rolling, () => new Date());
  }
  const next: Trial = { ...trial, boots };
  writeUpdateState(root, next);
  stepReached('trial-started');
  return { restart: false, running: trial.to, trial: next };
}

/** `current` back to `from`, the outcome recorded, then a restart into `from`. */
export function rollBack(
  root: string,
  state: Extract<UpdateState, { phase: 'rolling_back' }>,
  now: () => Date,
): BootDecision {
  stepReached('rolling-back');
  switchCurrent(root, state.from);
  stepReached('rolled-back');
  writeUpdateState(root, {
    phase: 'idle',
    last: {
      order_id: state.order_id,
      version: state.to,
      result: 'rolled_back',
      reason: state.reason,
      at: now().toISOString(),
    },
  });
  return { restart: true, reason: `rolled back from ${state.to}: ${state.reason}` };
}

/**
 * The decision the launcher (bin/tps-agent-launcher.ts) took for this start, read without
 * changing anything: the boot was counted once already, before the release loaded.
 */
export function readResolvedBoot(root: string): BootDecision {
  const running = currentVersion(root);
  const state = readUpdateState(root);
  if (state.phase === 'trial' && state.to === running)
    return { restart: false, running, trial: state };
  return { restart: false, running };
}

/**
 * The launcher could not start the release on trial: the reason is kept for the roll-back
 * that follows once the starts run out. Outside a trial nothing is recorded. The message is
 * what the release wrote as it died (a broken runtime's shell error quotes its bytes), so
 * it is kept printable: the roll-back's outcome must pass the update report's schema, or
 * the state would read as none and the same order be applied again.
 */
export function recordStartFailure(root: string, message: string): void {
  const state = readUpdateState(root);
  if (state.phase !== 'trial' || state.to !== currentVersion(root)) return;
  writeUpdateState(root, { ...state, start_error: printable(message).slice(0, 300) });
}
