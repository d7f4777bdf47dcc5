/**
 * End-of-day (settlement): a payment terminal closes its day's batch and submits it to the
 * acquirer (ZVT 06 50; docs/zvt.md, "End-of-day"). The agent runs it on the fleet's
 * schedule, on demand, or when the terminal says it needs one, and reports what the
 * terminal answered; the relay turns each report into a TerminalSettlement event.
 */
import { z } from 'zod';
import { AccountId } from './accounts.js';
import {
  Amount,
  Currency,
  Description,
  ReceiptText,
  ResultCode,
  TerminalId,
  TimestampV1,
} from './fields.js';

/** Why an end-of-day ran. */
export const SettlementTrigger = z.enum([
  /** The fleet configuration's daily time (`end_of_day.at`). */
  'SCHEDULE',
  /** `tps fleet end-of-day`, `POST /fleet/end-of-day`. */
  'ON_DEMAND',
  /** The terminal reported that it needs one (ZVT status F0, or a payment refused with F0). */
  'TERMINAL_REQUIRED',
]);
export type SettlementTrigger = z.infer<typeof SettlementTrigger>;

/** The card groups a ZVT terminal totals separately (BMP 60, zvt-notes §5.6). */
export const SettlementCardGroup = z.enum([
  'GIROCARD',
  'JCB',
  'MASTERCARD',
  'AMEX',
  'VISA',
  'DINERS',
  'OTHERS',
]);

export const SettlementTotal = z.object({
  card_group: SettlementCardGroup,
  count: z.int().min(0).max(255),
  amount: Amount,
});

/** What one end-of-day on the terminal ended with. */
export const Settlement = z.object({
  /** SUCCESS: the batch is closed. FAILED: it is still open (`result_code`, `result_description`). */
  status: z.enum(['SUCCESS', 'FAILED']),
  trigger: SettlementTrigger,
  /** 1 for the first try of this end-of-day, 2 for its first retry, … */
  attempt: z.int().min(1).max(1_000_000),
  /** When the agent asked the terminal for it. */
  started_at: TimestampV1,
  /** When the terminal answered. */
  finished_at: TimestampV1,
  result_code: ResultCode.optional(),
  result_description: Description.optional(),
  /** The period: from the last successful end-of-day the agent ran (absent: none known), to now. */
  period_start: TimestampV1.optional(),
  /** The batch's total (ZVT BMP 04), in minor units of `currency`. */
  total_amount: Amount.optional(),
  currency: Currency.optional(),
  /** The receipt numbers of the batch's first and last payment (ZVT BMP 60). */
  first_receipt_number: z.int().min(0).max(9999).optional(),
  last_receipt_number: z.int().min(0).max(9999).optional(),
  /** The terminal's trace number of the end-of-day (ZVT BMP 0B). */
  trace_number: z.int().min(0).max(999_999).optional(),
  /** Count and amount per card group; groups without payments are left out. */
  totals: z.array(SettlementTotal).max(SettlementCardGroup.options.length).optional(),
  /** The receipt the terminal printed for it, within the spec's receipt limits. */
  receipt_text: ReceiptText.optional(),
  /** After a failure: when the agent tries again. */
  retry_at: TimestampV1.optional(),
});
export type Settlement = z.infer<typeof Settlement>;

/** agent → relay, through the agent's report outbox. */
export const SettlementReport = z.object({
  type: z.literal('settlement'),
  settlement: Settlement,
});
export type SettlementReport = z.infer<typeof SettlementReport>;

/** The data of a TerminalSettlement event. */
export const TerminalSettlement = Settlement.extend({ terminal_id: TerminalId });
export type TerminalSettlement = z.infer<typeof TerminalSettlement>;

/** `POST /fleet/end-of-day`: one terminal or a cohort, exactly one of the two. */
export const FleetEndOfDayRequest = z
  .strictObject({
    /** The account acted for: the operator names one; an account's own credential may name itself. */
    account_id: AccountId.optional(),
    terminal_id: TerminalId.optional(),
    cohort: z
      .string()
      .regex(/^cohort-[0-9a-z-]{1,120}$/, 'must be a cohort id (cohort-…)')
      .optional(),
  })
  .refine((r) => (r.terminal_id === undefined) !== (r.cohort === undefined), {
    path: ['terminal_id'],
    message: 'name exactly one of terminal_id and cohort',
  });
export type FleetEndOfDayRequest = z.infer<typeof FleetEndOfDayRequest>;

export const FleetEndOfDayResponse = z.object({
  /** The terminals an end-of-day command was queued for (it runs when each is idle). */
  terminal_ids: z.array(TerminalId),
});
export type FleetEndOfDayResponse = z.infer<typeof FleetEndOfDayResponse>;

/** The settlement of a terminal whose reader has no end-of-day (the native reader). */
export function noEndOfDay(trigger: SettlementTrigger, at: string): Settlement {
  return {
    status: 'FAILED',
    trigger,
    attempt: 1,
    started_at: at,
    finished_at: at,
    result_code: 'NOT_SUPPORTED',
    result_description: "This terminal's card reader has no end-of-day",
  };
}
