/**
 * The API's shapes as the client sees them, inferred from protocol/'s zod schemas, per
 * revision: `TransactionOf<'v1'>` has millisecond timestamps and `extra_amounts`,
 * `TransactionOf<'v0'>` the older shape.
 */
import type { z } from 'zod';
import type {
  ConfirmRequest,
  ContinueRequest,
  GetRequest,
  PrintRequest,
  PurchaseRequest,
  RefundRequest,
  Revision,
  SimulatorCreateResponse,
  TerminalStatusV0,
  TerminalStatusV1,
  TransactionV0,
  TransactionV1,
  UnconfirmedRequest,
  TerminalStatusRequest,
  EventListRequest,
} from '../protocol/index.js';

export type { Revision };

export type TransactionOf<R extends Revision> = R extends 'v1'
  ? z.infer<typeof TransactionV1>
  : z.infer<typeof TransactionV0>;
export type TerminalStatusOf<R extends Revision> = R extends 'v1'
  ? z.infer<typeof TerminalStatusV1>
  : z.infer<typeof TerminalStatusV0>;
export type AnyTransaction = TransactionOf<'v1'> | TransactionOf<'v0'>;

/** What a caller passes: the schemas' input types. */
export type PurchaseBody = z.input<typeof PurchaseRequest>;
export type RefundBody = z.input<typeof RefundRequest>;
export type ConfirmBody = z.input<typeof ConfirmRequest>;
export type GetBody = z.input<typeof GetRequest>;
export type ContinueBody = z.input<typeof ContinueRequest>;
export type UnconfirmedBody = z.input<typeof UnconfirmedRequest>;
export type TerminalStatusBody = z.input<typeof TerminalStatusRequest>;
export type PrintBody = z.input<typeof PrintRequest>;
export type EventListBody = z.input<typeof EventListRequest>;
export type SimulatorCredential = SimulatorCreateResponse;

export interface TransactionResponse<R extends Revision> {
  transaction: TransactionOf<R>;
}
export interface TransactionsResponse<R extends Revision> {
  transactions: TransactionOf<R>[];
}
export interface TerminalStatusResponse<R extends Revision> {
  status: TerminalStatusOf<R>;
}
export interface PrintResponse {
  queued: boolean;
}

/** The transaction states after which nothing more is owed to the service. */
export const FINAL_STATES: ReadonlySet<string> = new Set(['CONFIRMED', 'COMMITTED']);
export const SUCCESS = 'SUCCESS';
