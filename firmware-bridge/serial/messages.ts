/**
 * The messages of the card-reader serial link: one JSON object per DATA frame, in a
 * versioned envelope `{ "v": 1, "type": ..., ...fields }`. This is the firmware-bridge
 * contract with the reader's firmware; both ends validate at the boundary and refuse (NAK)
 * what does not parse, with the reason. docs/serial-protocol.md lists them.
 *
 * Host: the agent's card-reader driver. Reader: the firmware (or its emulator).
 */
import { z } from 'zod';
import { Amount, Currency, Description, ResultCode, TransactionId } from '../../protocol/fields.js';
import { TransactionResultDetails } from '../../protocol/terminal-link.js';
import { TerminalReadings } from '../../protocol/terminal-status.js';
import { CustomerIdentity, Reference } from '../../protocol/transaction.js';

/** The envelope version this code speaks; a message with another `v` is refused. */
export const MESSAGE_VERSION = 1;

const envelope = <T extends string>(type: T) => ({
  v: z.literal(MESSAGE_VERSION),
  type: z.literal(type),
});

/** Text the reader shows, as the status resource's `screen_message`. */
export const ScreenText = z.string().min(1).max(255);

/**
 * Chosen by the host for a query and echoed in its answer, so that a late answer to an
 * earlier query (one that timed out) is never taken for the answer to a later one.
 */
export const QueryId = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces');

// ---- host to reader ----

export const StartTransaction = z
  .object({
    ...envelope('transaction.start'),
    transaction_id: TransactionId,
    kind: z.enum(['PURCHASE', 'REFUND', 'ACCOUNT_CHECK']),
    requested_amount: Amount,
    currency: Currency,
    cashback_amount: Amount.optional(),
    /** Stop at the customer-identified point and wait for `transaction.continue`. */
    pause_on_customer_identified: z.boolean(),
    customer_not_present: z.boolean().optional(),
    /** For a referenced refund: the original purchase's reference. */
    original_reference: Reference.optional(),
  })
  .refine((m) => m.cashback_amount === undefined || m.kind === 'PURCHASE', {
    message: 'cashback_amount is allowed only on a PURCHASE',
    path: ['cashback_amount'],
  })
  .refine((m) => m.original_reference === undefined || m.kind === 'REFUND', {
    message: 'original_reference is allowed only on a REFUND',
    path: ['original_reference'],
  });

/** Go on from the customer-identified pause, optionally with a new amount. */
export const ContinueTransaction = z.object({
  ...envelope('transaction.continue'),
  transaction_id: TransactionId,
  requested_amount: Amount.optional(),
});

/** Stop a running transaction; the reader answers with a result (CANCELLED, or COMPLETED if too late). */
export const CancelTransaction = z.object({
  ...envelope('transaction.cancel'),
  transaction_id: TransactionId,
});

/** Undo a completed transaction; the reader answers with a result. */
export const ReverseTransaction = z.object({
  ...envelope('transaction.reverse'),
  transaction_id: TransactionId,
});

/** Ask for the reader's record of its last transaction (crash recovery). */
export const LastTransactionQuery = z.object({
  ...envelope('last_transaction.query'),
  query_id: QueryId.optional(),
});

/** Ask for a status report now (the reader may also send them unasked). */
export const StatusQuery = z.object({
  ...envelope('status.query'),
  query_id: QueryId.optional(),
});

// ---- reader to host ----

export const TransactionProgress = z.object({
  ...envelope('transaction.progress'),
  transaction_id: TransactionId,
  screen_text: ScreenText,
});

/** The pause point: the card is known, the reader waits for continue or cancel. */
export const CustomerIdentified = z.object({
  ...envelope('transaction.customer_identified'),
  transaction_id: TransactionId,
  customer_identity: CustomerIdentity,
});

/**
 * COMPLETED: final on the reader, success or an error code. CANCELLED: stopped or
 * reversed; the reader will not charge.
 */
export const ResultPhase = z.enum(['COMPLETED', 'CANCELLED']);

export const TransactionResult = z.object({
  ...envelope('transaction.result'),
  transaction_id: TransactionId,
  phase: ResultPhase,
  result_code: ResultCode,
  result_description: Description.optional(),
  details: TransactionResultDetails.optional(),
});

/** IN_PROGRESS: started and not yet at a pause or a result. */
export const LastTransactionPhase = z.enum([
  'IN_PROGRESS',
  'CUSTOMER_IDENTIFIED',
  'COMPLETED',
  'CANCELLED',
]);

export const LastTransactionRecord = z
  .object({
    transaction_id: TransactionId,
    phase: LastTransactionPhase,
    result_code: ResultCode.optional(),
    result_description: Description.optional(),
    details: TransactionResultDetails.optional(),
  })
  .refine(
    (r) => (r.phase === 'COMPLETED' || r.phase === 'CANCELLED') === (r.result_code !== undefined),
    { message: 'result_code is required when, and only when, the phase is final' },
  );

export type LastTransactionRecord = z.infer<typeof LastTransactionRecord>;

/** `transaction: null`: the reader has no record (never ran one, or was wiped). */
export const LastTransactionAnswer = z.object({
  ...envelope('last_transaction.answer'),
  /** The query's `query_id`, when it had one. */
  query_id: QueryId.optional(),
  transaction: LastTransactionRecord.nullable(),
});

/** Unasked on every change, or the answer to a `status.query` (then with its `query_id`). */
export const StatusReport = z.object({
  ...envelope('status.report'),
  query_id: QueryId.optional(),
  ...TerminalReadings.pick({
    battery_percentage: true,
    battery_charging: true,
    plugged_in: true,
    screen_message: true,
  }).shape,
});

// ---- unions ----

export const HostMessage = z.discriminatedUnion('type', [
  StartTransaction,
  ContinueTransaction,
  CancelTransaction,
  ReverseTransaction,
  LastTransactionQuery,
  StatusQuery,
]);
export type HostMessage = z.infer<typeof HostMessage>;

export const ReaderMessage = z.discriminatedUnion('type', [
  TransactionProgress,
  CustomerIdentified,
  TransactionResult,
  LastTransactionAnswer,
  StatusReport,
]);
export type ReaderMessage = z.infer<typeof ReaderMessage>;

export const SerialMessage = z.union([HostMessage, ReaderMessage]);
export type SerialMessage = z.infer<typeof SerialMessage>;

export type ParseResult<T> = { ok: true; message: T } | { ok: false; reason: string };

/**
 * Validates a decoded JSON value against a message schema; a refusal names the envelope
 * version or every failing field, for the NAK and the logs.
 */
export function parseMessage<T>(schema: z.ZodType<T>, value: unknown): ParseResult<T> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, reason: 'message must be a JSON object' };
  }
  const version = (value as { v?: unknown }).v;
  if (version !== MESSAGE_VERSION) {
    return {
      ok: false,
      reason: `unsupported message envelope version ${JSON.stringify(version)} (expected ${MESSAGE_VERSION})`,
    };
  }
  const result = schema.safeParse(value);
  if (result.success) return { ok: true, message: result.data };
  const reason = result.error.issues
    .map((issue) => `${issue.path.length ? issue.path.join('.') : '(message)'}: ${issue.message}`)
    .join('; ');
  return { ok: false, reason };
}
