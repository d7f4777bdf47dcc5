/**
 * The decisions of a rollout, as pure functions of its record, the cohort and the time
 * (docs/fleet.md, "Rollouts"): who is in the next wave, whether a wave passed its health
 * gate, and what starting, pausing and resuming do. Nothing here reads the store or
 * publishes: cloud/rollouts/rollouts.ts does, around these.
 */
import type { RolloutRecord, RolloutTerminalRecord } from '../store/records.js';

export const LAST_WAVE = 3;
/** The agent's word for an update that ended healthy (protocol/update.ts). */
export const SUCCESS = 'installed';

export type GateVerdict =
  { kind: 'wait'; deadline: number } | { kind: 'pass' } | { kind: 'fail'; reason: string };

/**
 * The health gate of the wave under way: every terminal of it reported `installed`
 * within the deadline, or the failures (any other outcome, or no report by the
 * deadline) stay within the threshold: none in the first wave, at most
 * `maxFailurePercent` of the wave after it. Too many failures fail it at once, before
 * the deadline: there is no point waiting for the rest.
 */
export function gate(rollout: RolloutRecord, now: number): GateVerdict {
  const members = rollout.terminals.filter((t) => t.wave === rollout.wave);
  const deadline = Date.parse(rollout.waveStartedAt) + rollout.deadlineS * 1000;
  const late = now >= deadline;
  const failed = members.filter(
    (t) => (t.result !== undefined && t.result !== SUCCESS) || (t.result === undefined && late),
  );
  const allowed =
    rollout.wave <= 1 ? 0 : Math.floor((members.length * rollout.maxFailurePercent) / 100);
  if (failed.length > allowed) {
    return {
      kind: 'fail',
      reason:
        `wave ${rollout.wave}: ${failed.length} of ${members.length} failed ` +
        `(at most ${allowed} allowed): ${failed.map((t) => failure(t, rollout.deadlineS)).join('; ')}`,
    };
  }
  if (late || members.every((t) => t.result !== undefined)) return { kind: 'pass' };
  return { kind: 'wait', deadline };
}

function failure(terminal: RolloutTerminalRecord, deadlineS: number): string {
  if (terminal.result === undefined)
    return `${terminal.terminalId}: no report within ${deadlineS} s`;
  const reason = terminal.reason ? `: ${terminal.reason}` : '';
  return `${terminal.terminalId}: ${terminal.result}${reason}`;
}

/**
 * The terminals of the next wave, from the cohort as it is now (a terminal paired since
 * the start is in a later wave): one, then `sharePercent` of the cohort (at least one),
 * then all the rest. Connected terminals come first, so the first wave is not spent
 * waiting for one that is off; then by id, so the choice is the same on every relay.
 */
export function nextWave(
  rollout: RolloutRecord,
  cohort: ReadonlyArray<{ id: string; connected: boolean }>,
): { wave: number; members: string[] } {
  const ordered = new Set(rollout.terminals.map((t) => t.terminalId));
  const remaining = cohort
    .filter((t) => !ordered.has(t.id))
    .sort((a, b) => Number(b.connected) - Number(a.connected) || a.id.localeCompare(b.id))
    .map((t) => t.id);
  const wave = rollout.wave + 1;
  const size =
    wave === 1
      ? 1
      : wave === 2
        ? Math.max(1, Math.ceil((cohort.length * rollout.sharePercent) / 100))
        : remaining.length;
  return { wave, members: remaining.slice(0, size) };
}

/** The record once the next wave is ordered, or completed when no wave is left. */
export function advance(
  rollout: RolloutRecord,
  cohort: ReadonlyArray<{ id: string; connected: boolean }>,
  now: Date,
): RolloutRecord {
  let next = rollout;
  // A wave with nobody left to order (a cohort of one has no second wave) passes at once.
  while (next.wave < LAST_WAVE) {
    const { wave, members } = nextWave(next, cohort);
    const at = now.toISOString();
    next = {
      ...next,
      wave,
      waveStartedAt: at,
      updatedAt: at,
      terminals: [
        ...next.terminals,
        ...members.map((terminalId) => ({ terminalId, wave, orderedAt: at })),
      ],
    };
    if (members.length > 0) return next;
  }
  return { ...next, state: 'completed', updatedAt: now.toISOString() };
}

/** What the gate's verdict does to a running rollout; undefined: nothing yet. */
export function step(
  rollout: RolloutRecord,
  cohort: ReadonlyArray<{ id: string; connected: boolean }>,
  now: Date,
): RolloutRecord | undefined {
  if (rollout.state !== 'running') return undefined;
  const verdict = gate(rollout, now.getTime());
  if (verdict.kind === 'wait') return undefined;
  if (verdict.kind === 'fail') {
    return {
      ...rollout,
      state: 'paused',
      pausedReason: verdict.reason,
      updatedAt: now.toISOString(),
    };
  }
  return advance(rollout, cohort, now);
}

export function pause(rollout: RolloutRecord, now: Date): RolloutRecord {
  return {
    ...rollout,
    state: 'paused',
    pausedReason: 'paused by an operator',
    updatedAt: now.toISOString(),
  };
}

/**
 * Resuming accepts the wave as it stands when it failed its gate (an operator decided
 * its failures are acceptable) and orders the next one; a wave paused by an operator
 * before its gate said anything goes on, its unreported terminals given a new deadline.
 * A terminal whose update failed is not ordered again: the agent tries an order once.
 */
export function resume(
  rollout: RolloutRecord,
  cohort: ReadonlyArray<{ id: string; connected: boolean }>,
  now: Date,
): RolloutRecord {
  const { pausedReason: _reason, ...running } = rollout;
  const resumed: RolloutRecord = { ...running, state: 'running', updatedAt: now.toISOString() };
  if (gate(resumed, now.getTime()).kind === 'fail') return advance(resumed, cohort, now);
  return { ...resumed, waveStartedAt: now.toISOString() };
}
