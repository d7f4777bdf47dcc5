/** The Terminal status resource of both revisions. */
import { z } from 'zod';
import { TerminalId, TimestampV0, TimestampV1, formatTimestamp, type Revision } from './fields.js';

export const TERMINAL_TRANSACTION_STATES = [
  'AWAITING_CONTINUE',
  'BUSY',
  'PROCESSING',
  'READY',
] as const;
export const TerminalTransactionState = z.enum(TERMINAL_TRANSACTION_STATES);
export type TerminalTransactionState = z.infer<typeof TerminalTransactionState>;

/** What a terminal reports about itself; every member optional, as not all models have them. */
export const TerminalReadings = z.object({
  connected: z.boolean().optional(),
  transaction_state: TerminalTransactionState.optional(),
  screen_message: z.string().min(1).max(255).optional(),
  battery_charging: z.boolean().optional(),
  battery_percentage: z.number().min(0).max(100).optional(),
  plugged_in: z.boolean().optional(),
  // Extensions for local mode (docs/local-mode.md, "Status"): what waits on the agent.
  /** Whether the agent reaches the relay now (its MQTT link up and acknowledging). */
  relay_reachable: z.boolean().optional(),
  /** Transactions made locally whose reports the relay has not acknowledged yet. */
  local_pending_count: z.int().min(0).optional(),
  /** Their requested amounts together, in minor units. */
  local_pending_total: z.int().min(0).optional(),
});
export type TerminalReadings = z.infer<typeof TerminalReadings>;

export const TerminalStatusV1 = TerminalReadings.extend({
  terminal_id: TerminalId,
  updated_at: TimestampV1,
});
export const TerminalStatusV0 = TerminalReadings.extend({
  terminal_id: TerminalId.optional(),
  updated_at: TimestampV0.optional(),
});
export const terminalStatusSchema = (revision: Revision) =>
  revision === 'v1' ? TerminalStatusV1 : TerminalStatusV0;
export type TerminalStatus = z.infer<typeof TerminalStatusV1>;

export function renderTerminalStatus(
  status: TerminalStatus,
  revision: Revision,
): z.infer<typeof TerminalStatusV0> {
  return revision === 'v1'
    ? status
    : { ...status, updated_at: formatTimestamp(status.updated_at, 'v0') };
}
