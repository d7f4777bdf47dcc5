/**
 * What the relay and a terminal say to each other, whatever carries it (in process, or
 * MQTT between the relay and the agent). Commands go to the terminal; reports come back.
 * Every command carries a `command_id` so that a terminal applies a re-sent command once.
 */
import { z } from 'zod';
import {
  Amount,
  Currency,
  Description,
  ExternalId,
  ReceiptText,
  ResultCode,
  TimestampV1,
  TransactionId,
} from './fields.js';
import {
  CustomerIdentity,
  Dcc,
  PaymentMethodDetails,
  Reference,
  TransactionV1,
} from './transaction.js';
import { ConfirmRequest, ContinueRequest } from './api.js';
import { SettlementReport } from './settlement.js';
import { TerminalReadings } from './terminal-status.js';

export const CommandId = z.string().min(1).max(63);

export const StartTransactionCommand = z.object({
  type: z.literal('transaction.start'),
  command_id: CommandId,
  transaction_id: TransactionId,
  external_id: ExternalId,
  kind: z.enum(['PURCHASE', 'REFUND', 'ACCOUNT_CHECK']),
  requested_amount: Amount,
  currency: Currency,
  cashback_amount: Amount.optional(),
  customer_not_present: z.boolean().optional(),
  pause_on_customer_identified: z.boolean(),
  /** For a referenced refund: the original purchase's terminal-side reference. */
  original_reference: Reference.optional(),
  /**
   * The terminal refuses the start after this moment (acknowledging it as EXPIRED and
   * reporting it CANCELLED with result EXPIRED), so that a relay which never saw it
   * acknowledged can know, once it has passed, that it will never run.
   */
  expires_at: TimestampV1.optional(),
  /**
   * For a terminal in local mode: the relay's record of the transaction as committed with
   * this start, so that the agent, which decides such a terminal's transactions, holds it
   * whole (docs/local-mode.md).
   */
  transaction: TransactionV1.optional(),
});

export const ContinueTransactionCommand = z.object({
  type: z.literal('transaction.continue'),
  command_id: CommandId,
  transaction_id: TransactionId,
  requested_amount: Amount.optional(),
});

/**
 * The transaction must not charge: the terminal stops it if it is still running, and
 * reverses it if it already succeeded. Safe to send in any state and to repeat.
 */
export const CancelTransactionCommand = z.object({
  type: z.literal('transaction.cancel'),
  command_id: CommandId,
  transaction_id: TransactionId,
});

/**
 * A POS's confirm that reached the relay, for a terminal in local mode: its agent decides it
 * with the shared rules over its own record and reports the record (docs/local-mode.md).
 * Refused after `expires_at`, the end of the request's wait, so that a confirm the POS may
 * have repeated elsewhere meanwhile is never applied late.
 */
export const ConfirmTransactionCommand = z.object({
  type: z.literal('transaction.confirm'),
  command_id: CommandId,
  transaction_id: TransactionId,
  request: ConfirmRequest,
  expires_at: TimestampV1,
});
export type ConfirmTransactionCommand = z.infer<typeof ConfirmTransactionCommand>;

/**
 * A POS's continue that reached the relay, for a terminal in local mode: decided by its
 * agent as a confirm is (`transaction.continue` is the reader's continue, which the
 * agent's decision then gives its reader). Refused after `expires_at` likewise.
 */
export const ContinueRequestCommand = z.object({
  type: z.literal('transaction.continue_request'),
  command_id: CommandId,
  transaction_id: TransactionId,
  request: ContinueRequest,
  expires_at: TimestampV1,
});
export type ContinueRequestCommand = z.infer<typeof ContinueRequestCommand>;

/** The POS's requests a terminal in local mode decides when they reach the relay. */
export type AgentDecidedCommand = ConfirmTransactionCommand | ContinueRequestCommand;

export const PrintCommand = z.object({
  type: z.literal('print'),
  command_id: CommandId,
  format: z.literal('PNG'),
  /** The whole PNG, base64. */
  contents: z.string().min(1),
});

/**
 * Close the terminal's day (docs/zvt.md, "End-of-day"): the agent runs it as soon as no
 * payment runs, and reports a settlement. A terminal whose reader has none reports it FAILED.
 */
export const EndOfDayCommand = z.object({
  type: z.literal('terminal.end_of_day'),
  command_id: CommandId,
});

export const TerminalCommand = z.discriminatedUnion('type', [
  StartTransactionCommand,
  ContinueTransactionCommand,
  CancelTransactionCommand,
  ConfirmTransactionCommand,
  ContinueRequestCommand,
  PrintCommand,
  EndOfDayCommand,
]);
export type TerminalCommand = z.infer<typeof TerminalCommand>;
export type StartTransactionCommand = z.infer<typeof StartTransactionCommand>;

/**
 * The payment method as a terminal reports it: a card number is taken in any form up to
 * 64 characters, so that a report whose number is not masked as the Transaction requires
 * is still read (and its result applied) while the relay drops the number
 * (cloud/terminals/card-data-guard.ts). Refusing the whole report would leave the result
 * unknown and hold up every later report of the agent's outbox behind it.
 */
export const ReportedPaymentMethodDetails = PaymentMethodDetails.extend({
  card_number_customer: z.string().max(64).optional(),
  card_number_merchant: z.string().max(64).optional(),
});

/** The payment details a terminal reports with a result; members as on the Transaction. */
export const TransactionResultDetails = z.object({
  authorized_amount: Amount.optional(),
  total_amount: Amount.optional(),
  tip_amount: Amount.optional(),
  surcharge_amount: Amount.optional(),
  cashback_amount: Amount.optional(),
  payment_method_details: ReportedPaymentMethodDetails.optional(),
  receipt_details_customer: ReceiptText.optional(),
  receipt_details_merchant: ReceiptText.optional(),
  reference: Reference.optional(),
  dcc: Dcc.optional(),
  customer_identity: CustomerIdentity.optional(),
});
export type TransactionResultDetails = z.infer<typeof TransactionResultDetails>;

export const TransactionReport = z.object({
  type: z.literal('transaction'),
  transaction_id: TransactionId,
  /**
   * CUSTOMER_IDENTIFIED: paused at the identification point, waiting for continue.
   * COMPLETED: the result is final on the terminal (success or an error code).
   * CANCELLED: the terminal stopped or reversed the transaction; it will not charge.
   */
  phase: z.enum(['CUSTOMER_IDENTIFIED', 'COMPLETED', 'CANCELLED']),
  result_code: ResultCode.optional(),
  result_description: Description.optional(),
  details: TransactionResultDetails.optional(),
});
export type TransactionReport = z.infer<typeof TransactionReport>;

export const StatusReport = z.object({
  type: z.literal('status'),
  at: TimestampV1,
  readings: TerminalReadings,
});
export type StatusReport = z.infer<typeof StatusReport>;

/** Why the agent refused a request it decides: an error code of the catalogue, and why. */
export const AgentRefusal = z.object({ code: z.string().max(63), description: Description });

/**
 * In local mode the agent decides its terminal's transactions (docs/local-mode.md): each
 * change of one is reported as the whole transaction, in the commit that made it, and
 * the relay keeps it as a mirror. Replaces the phase reports of such a transaction.
 */
export const LocalTransactionReport = z.object({
  type: z.literal('local_transaction'),
  /** Its card numbers read in any form, as a transaction report's (ReportedPaymentMethodDetails). */
  transaction: TransactionV1.extend({
    payment_method_details: ReportedPaymentMethodDetails.optional(),
  }),
  /**
   * The relay's `transaction.confirm` or `transaction.continue_request` this report answers: the agent's decision is the
   * transaction, or the refusal named here (an error code of the catalogue and why).
   */
  answers: z
    .object({
      command_id: CommandId,
      error: AgentRefusal.optional(),
    })
    .optional(),
});
export type LocalTransactionReport = z.infer<typeof LocalTransactionReport>;

/**
 * The agent's refusal of a relay's `transaction.confirm` or `transaction.continue_request`
 * for a pair it holds no record of (a `local_transaction` report answers the others), so
 * the POS hears the refusal rather than OUTCOME_UNKNOWN.
 */
export const CommandRefusedReport = z.object({
  type: z.literal('command_refused'),
  command_id: CommandId,
  error: AgentRefusal,
});
export type CommandRefusedReport = z.infer<typeof CommandRefusedReport>;

export const TerminalReport = z.discriminatedUnion('type', [
  TransactionReport,
  StatusReport,
  SettlementReport,
  LocalTransactionReport,
  CommandRefusedReport,
]);
export type TerminalReport = z.infer<typeof TerminalReport>;
