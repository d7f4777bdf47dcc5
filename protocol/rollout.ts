/**
 * Rollouts of agent releases to a cohort, in waves (docs/fleet.md, "Rollouts"): what an
 * operator sends to start one and what the relay answers of where it stands.
 */
import { z } from 'zod';
import { AccountId } from './accounts.js';
import { CohortId } from './events.js';
import { TimestampV1 } from './fields.js';
import { ReleaseArch, ReleaseVersion } from './release.js';
import { UpdateOrderId } from './update.js';

/** Where the rollout operations live, under the API base address (…/pos). */
export const ROLLOUTS_PATH = '/v1/fleet/rollouts';

export const ROLLOUT_DEFAULTS = {
  /** The second wave: this share of the cohort, in percent (at least one terminal). */
  sharePercent: 10,
  /** After the first wave (where any failure pauses): more failures than this pause. */
  maxFailurePercent: 10,
  /** How long a wave's terminals have to report `installed`. */
  deadlineS: 900,
} as const;

export const RolloutStartRequest = z
  .object({
    /**
     * The merchant account whose cohort it reaches. Optional in the schema, as on the other
     * operations that name an account, but the operator (who alone starts rollouts) must
     * send it: without, 400 INVALID_REQUEST.
     */
    account_id: AccountId.optional(),
    version: ReleaseVersion,
    cohort: CohortId,
    /** The release published for this architecture must exist (default: linux-x64). */
    arch: ReleaseArch.optional(),
    share_percent: z.number().int().min(1).max(100).optional(),
    max_failure_percent: z.number().int().min(0).max(100).optional(),
    deadline_s: z
      .number()
      .int()
      .min(10)
      .max(7 * 86_400)
      .optional(),
  })
  .strict();
export type RolloutStartRequest = z.infer<typeof RolloutStartRequest>;

export const RolloutId = UpdateOrderId;

/** `GET …/rollouts?account_id=…`: the operator's filter; a merchant's own account or none. */
export const RolloutListQuery = z.strictObject({ account_id: AccountId.optional() });
export type RolloutListQuery = z.infer<typeof RolloutListQuery>;

export const ROLLOUT_STATES = ['running', 'paused', 'completed', 'superseded'] as const;
export const RolloutState = z.enum(ROLLOUT_STATES);
export type RolloutState = z.infer<typeof RolloutState>;

/** One terminal of a rollout: ordered in a wave, and how its update ended, once it said. */
export const RolloutTerminalView = z.object({
  terminal_id: z.string(),
  wave: z.number().int(),
  ordered_at: TimestampV1,
  /** installed, rolled_back, refused, failed (the agent's words); absent while under way. */
  result: z.string().optional(),
  reason: z.string().optional(),
  reported_at: TimestampV1.optional(),
});
export type RolloutTerminalView = z.infer<typeof RolloutTerminalView>;

export const RolloutView = z.object({
  id: RolloutId,
  /** The merchant account it reaches: its cohort is that account's. */
  account_id: z.string(),
  version: ReleaseVersion,
  cohort: z.string(),
  arch: ReleaseArch,
  share_percent: z.number().int(),
  max_failure_percent: z.number().int(),
  deadline_s: z.number().int(),
  state: RolloutState,
  /** The wave under way (1: one terminal, 2: the share, 3: all the rest). */
  wave: z.number().int(),
  wave_started_at: TimestampV1,
  /** Why it paused: an operator, or the gate with each failed terminal's reason. */
  paused_reason: z.string().optional(),
  superseded_by: RolloutId.optional(),
  created_at: TimestampV1,
  updated_at: TimestampV1,
  terminals: z.array(RolloutTerminalView),
});
export type RolloutView = z.infer<typeof RolloutView>;
