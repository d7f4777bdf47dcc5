/** Rows of `rollouts` and `rollout_terminals`, in either store, and the records they make. */
import type { RolloutRecord, RolloutTerminalRecord } from './records.js';

export interface RolloutRow {
  id: string;
  account_id: string;
  cohort: string;
  version: string;
  arch: string;
  share_percent: number;
  max_failure_percent: number;
  deadline_s: number;
  state: RolloutRecord['state'];
  wave: number;
  wave_started_at: string;
  paused_reason: string | null;
  superseded_by: string | null;
  created_at: string;
  updated_at: string;
  revision: number;
}

export interface RolloutTerminalRow {
  rollout_id: string;
  terminal_id: string;
  wave: number;
  ordered_at: string;
  result: string | null;
  reason: string | null;
  reported_at: string | null;
}

export const ROLLOUT_COLUMNS =
  'id, account_id, cohort, version, arch, share_percent, max_failure_percent, deadline_s, state, wave, wave_started_at, paused_reason, superseded_by, created_at, updated_at, revision';

export function rolloutValues(r: RolloutRecord) {
  return [
    r.id,
    r.accountId,
    r.cohort,
    r.version,
    r.arch,
    r.sharePercent,
    r.maxFailurePercent,
    r.deadlineS,
    r.state,
    r.wave,
    r.waveStartedAt,
    r.pausedReason ?? null,
    r.supersededBy ?? null,
    r.createdAt,
    r.updatedAt,
    r.revision,
  ] as const;
}

/** The columns an update changes, then the id and the revision it expects. */
export function rolloutUpdateValues(r: RolloutRecord, revision: number) {
  return [
    r.state,
    r.wave,
    r.waveStartedAt,
    r.pausedReason ?? null,
    r.supersededBy ?? null,
    r.updatedAt,
    revision + 1,
    r.id,
    revision,
  ] as const;
}

export function rolloutTerminalValues(rolloutId: string, t: RolloutTerminalRecord) {
  return [
    rolloutId,
    t.terminalId,
    t.wave,
    t.orderedAt,
    t.result ?? null,
    t.reason ?? null,
    t.reportedAt ?? null,
  ] as const;
}

export function toRollout(row: RolloutRow, terminals: RolloutTerminalRow[]): RolloutRecord {
  return {
    id: row.id,
    accountId: row.account_id,
    cohort: row.cohort,
    version: row.version,
    arch: row.arch,
    sharePercent: Number(row.share_percent),
    maxFailurePercent: Number(row.max_failure_percent),
    deadlineS: Number(row.deadline_s),
    state: row.state,
    wave: Number(row.wave),
    waveStartedAt: row.wave_started_at,
    ...(row.paused_reason !== null ? { pausedReason: row.paused_reason } : {}),
    ...(row.superseded_by !== null ? { supersededBy: row.superseded_by } : {}),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    revision: Number(row.revision),
    terminals: terminals
      .filter((t) => t.rollout_id === row.id)
      .map((t) => ({
        terminalId: t.terminal_id,
        wave: Number(t.wave),
        orderedAt: t.ordered_at,
        ...(t.result !== null ? { result: t.result } : {}),
        ...(t.reason !== null ? { reason: t.reason } : {}),
        ...(t.reported_at !== null ? { reportedAt: t.reported_at } : {}),
      })),
  };
}
