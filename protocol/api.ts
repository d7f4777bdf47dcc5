/**
 * Request and response bodies of every operation, per revision. Requests are parsed
 * leniently (unknown fields are dropped, for forward compatibility); responses are the
 * exact shapes the spec gives and are what the OpenAPI documents are generated from.
 */
import { z } from 'zod';
import { AccountId } from './accounts.js';
import { ReaderProtocol } from './reader-capabilities.js';
import {
  Amount,
  Currency,
  Description,
  ExternalId,
  Metadata,
  ResultCode,
  TerminalId,
  WaitSeconds,
  type Revision,
} from './fields.js';
import { TransactionState, transactionSchema } from './transaction.js';
import { terminalStatusSchema } from './terminal-status.js';
import {
  WebhookCreateResponse,
  WebhookListResponse,
  WebhookResponse,
  eventListResponseSchema,
} from './events.js';

/**
 * Wait options. Existing clients send `wait_seconds` at the top level, older ones
 * `wait_timeout`; `options.wait_seconds` wins over both.
 */
const waitFields = {
  wait_seconds: WaitSeconds.optional(),
  wait_timeout: WaitSeconds.optional(),
};
const waitOptions = { wait_seconds: WaitSeconds.optional() };

export const CreateOptions = z.object({
  ...waitOptions,
  on_customer_identified: z.object({ pause: z.boolean().optional() }).optional(),
});

export const PurchaseRequest = z.object({
  currency: Currency,
  external_id: ExternalId,
  requested_amount: Amount,
  terminal_id: TerminalId,
  cashback_amount: Amount.optional(),
  metadata: Metadata.optional(),
  options: CreateOptions.optional(),
  ...waitFields,
});
export type PurchaseRequest = z.infer<typeof PurchaseRequest>;

export const RefundRequest = z.object({
  currency: Currency,
  external_id: ExternalId,
  requested_amount: Amount,
  terminal_id: TerminalId,
  customer_not_present: z.boolean().optional(),
  metadata: Metadata.optional(),
  options: CreateOptions.optional(),
  original_purchase_external_id: ExternalId.optional(),
  original_purchase_terminal_id: TerminalId.optional(),
  ...waitFields,
});
export type RefundRequest = z.infer<typeof RefundRequest>;

export const ConfirmRequest = z.object({
  external_id: ExternalId,
  terminal_id: TerminalId,
  result_code: ResultCode,
  captured_amount: Amount.optional(),
  metadata: Metadata.optional(),
  result_description: Description.optional(),
  /** Sent by existing clients: how long a success stays changeable to failed. */
  commit_window_seconds: z.number().int().min(0).max(86_400).optional(),
});
export type ConfirmRequest = z.infer<typeof ConfirmRequest>;

export const GetRequest = z.object({
  external_id: ExternalId,
  terminal_id: TerminalId,
  options: z.object({ ...waitOptions, extra_amounts: z.boolean().optional() }).optional(),
  ...waitFields,
});
export type GetRequest = z.infer<typeof GetRequest>;

export const ContinueRequest = z.object({
  external_id: ExternalId,
  terminal_id: TerminalId,
  metadata: Metadata.optional(),
  requested_amount: Amount.optional(),
  options: z.object(waitOptions).optional(),
  ...waitFields,
});
export type ContinueRequest = z.infer<typeof ContinueRequest>;

export const UnconfirmedRequest = z.object({ terminal_id: TerminalId });
export const TerminalStatusRequest = z.object({ terminal_id: TerminalId });

export const PRINT_CONTENTS_MAX = 262_143;
export const PrintRequest = z.object({
  contents: z
    .string()
    .min(1)
    .max(PRINT_CONTENTS_MAX)
    .regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64'),
  format: z.enum(['PNG']),
  terminal_id: TerminalId,
  continue: z.boolean().optional(),
});
export type PrintRequest = z.infer<typeof PrintRequest>;

/**
 * Extension (docs/simulator.md): `reader_protocol` picks the reader the simulated
 * terminal's agent drives, its own native reader (default) or an emulated ZVT terminal.
 */
export const SimulatorCreateRequest = z.object({
  reader_protocol: ReaderProtocol.optional(),
});
export type SimulatorCreateRequest = z.infer<typeof SimulatorCreateRequest>;
export const SimulatorCreateResponse = z.object({
  terminal_id: TerminalId,
  username: z.string(),
  password: z.string(),
});
export type SimulatorCreateResponse = z.infer<typeof SimulatorCreateResponse>;

export const PrintResponse = z.object({ queued: z.boolean() });

/** Registers a real terminal: what it has, so the relay knows (e.g. whether it can print). */
export const TerminalCreateRequest = z.object({
  /** The account acted for: the operator names one; an account's own credential may name itself. */
  account_id: AccountId.optional(),
  printer: z.boolean().optional(),
  battery: z.boolean().optional(),
});
export type TerminalCreateRequest = z.infer<typeof TerminalCreateRequest>;
export const TerminalCreateResponse = SimulatorCreateResponse.extend({
  /** What the terminal's agent signs in to the broker with; the password is shown this once. */
  agent: z.object({
    broker_url: z.string(),
    username: z.string(),
    password: z.string(),
  }),
});
export type TerminalCreateResponse = z.infer<typeof TerminalCreateResponse>;

/** Search of the transactions a credential reaches (an extension), newest first. */
export const TRANSACTION_SEARCH_MAX_LIMIT = 100;
export const TransactionSearchRequest = z.object({
  terminal_id: TerminalId.optional(),
  external_id: ExternalId.optional(),
  state: TransactionState.optional(),
  result_code: ResultCode.optional(),
  /** Created at or after, ISO 8601 UTC. */
  created_from: z.iso.datetime().optional(),
  /** Created before, ISO 8601 UTC. */
  created_to: z.iso.datetime().optional(),
  limit: z.number().int().min(1).max(TRANSACTION_SEARCH_MAX_LIMIT).optional(),
  /** next_cursor of the page before. */
  cursor: z
    .string()
    .regex(/^txn-[0-9A-Za-z]{1,59}$/)
    .optional(),
});
export type TransactionSearchRequest = z.infer<typeof TransactionSearchRequest>;

/** The terminals a credential reaches (an extension): every one of its account, or its own. */
export const TerminalListRequest = z.object({});
export const TERMINAL_KINDS = ['SIMULATOR', 'AGENT'] as const;
export const terminalListResponseSchema = (revision: Revision) =>
  z.object({
    terminals: z.array(
      z.object({
        terminal_id: TerminalId,
        kind: z.enum(TERMINAL_KINDS),
        status: terminalStatusSchema(revision),
      }),
    ),
  });

export function responseSchemas(revision: Revision) {
  const Transaction = transactionSchema(revision);
  return {
    transaction: z.object({ transaction: Transaction }),
    transactions: z.object({ transactions: z.array(Transaction) }),
    status: z.object({ status: terminalStatusSchema(revision) }),
    print: PrintResponse,
    simulator: SimulatorCreateResponse,
    terminalCreated: TerminalCreateResponse,
    events: eventListResponseSchema(revision),
    webhookCreated: WebhookCreateResponse,
    webhooks: WebhookListResponse,
    webhook: WebhookResponse,
    terminals: terminalListResponseSchema(revision),
    search: z.object({
      transactions: z.array(Transaction),
      /** Present when more may follow: send it as `cursor`. */
      next_cursor: z.string().optional(),
    }),
  };
}

/** The wait a request asks for, in seconds, from whichever place the client put it. */
export function requestedWaitSeconds(
  body: { wait_seconds?: number; wait_timeout?: number; options?: { wait_seconds?: number } },
  fallback: number,
): number {
  return body.options?.wait_seconds ?? body.wait_seconds ?? body.wait_timeout ?? fallback;
}
