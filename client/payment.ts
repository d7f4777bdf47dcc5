/**
 * What the payment flow hands to the caller: the result as soon as the terminal has
 * one, and its settlement once the service has stored the confirmation.
 */
import type { Revision } from '../protocol/index.js';
import { TpsError, abortedError } from './errors.js';
import type { JournalEntry } from './journal.js';
import { SUCCESS, type AnyTransaction, type TransactionOf } from './types.js';

export interface PaymentResult<R extends Revision = 'v1'> {
  externalId: string;
  terminalId: string;
  /** result_code is SUCCESS: the payment succeeded so far (it is being confirmed). */
  success: boolean;
  resultCode: string;
  /** The transaction when its result became known (AWAITING_CONFIRM, or later). */
  transaction: TransactionOf<R>;
  /** Texts to print for the customer and the merchant, when the terminal gave them. */
  receipts: { customer?: string; merchant?: string };
  /** Resolves when the background confirmation ends. Never rejects. */
  settled: Promise<Settlement<R>>;
}

interface SettlementBase {
  externalId: string;
  terminalId: string;
}

/** How a payment ended with the service. */
export type Settlement<R extends Revision = 'v1'> =
  /** The service stored the POS's result: CONFIRMED or COMMITTED. */
  | (SettlementBase & {
      status: 'settled';
      success: boolean;
      resultCode: string;
      /** The POS aborted it (or gave up on a create it could not place). */
      aborted: boolean;
      transaction: TransactionOf<R>;
    })
  /**
   * The service holds another result than the POS (confirm answered INVALID_STATE, for
   * example a failure confirmed by hand, or a void after the grace period): the
   * transaction, where known, is the service's, and it is the true result.
   */
  | (SettlementBase & { status: 'conflict'; error: TpsError; transaction?: TransactionOf<R> })
  /** The service refused the create; nothing was started. */
  | (SettlementBase & { status: 'refused'; error: TpsError })
  /** The client closed first; a client on the same journal finishes it (recover()). */
  | (SettlementBase & { status: 'pending' });

export type PosClientEvent =
  /** Every answer to a create (or get) while the payment runs. */
  | { type: 'update'; externalId: string; terminalId: string; transaction: AnyTransaction }
  /** A request failed and will be repeated after `delayMs`. */
  | {
      type: 'retry';
      externalId: string;
      terminalId: string;
      operation: 'create' | 'confirm';
      error: TpsError;
      delayMs: number;
    }
  | { type: 'result'; externalId: string; terminalId: string; transaction: AnyTransaction }
  | { type: 'settled'; settlement: Settlement<Revision> };

export function storedError(entry: JournalEntry): TpsError {
  const error = entry.error ?? { code: 'UNEXPECTED' };
  return new TpsError({
    code: error.code,
    externalId: entry.externalId,
    message: `${entry.externalId}: ${error.code}${error.description ? `: ${error.description}` : ''}`,
    ...(error.status !== undefined ? { status: error.status } : {}),
    ...(error.description !== undefined ? { description: error.description } : {}),
    ...(entry.transaction ? { transaction: entry.transaction } : {}),
  });
}

/** The settlement an entry records; `pending` while it is not final. */
export function settlementOf<R extends Revision>(entry: JournalEntry): Settlement<R> {
  const base = { externalId: entry.externalId, terminalId: entry.terminalId };
  const transaction = entry.transaction as TransactionOf<R> | undefined;
  switch (entry.phase) {
    case 'SETTLED': {
      const resultCode = transaction?.result_code ?? entry.confirm?.resultCode ?? 'UNKNOWN';
      return {
        ...base,
        status: 'settled',
        success: resultCode === SUCCESS,
        resultCode,
        aborted: entry.abort !== undefined,
        transaction: transaction!,
      };
    }
    case 'CONFLICT':
      return {
        ...base,
        status: 'conflict',
        error: storedError(entry),
        ...(transaction ? { transaction } : {}),
      };
    case 'REFUSED':
      return { ...base, status: 'refused', error: storedError(entry) };
    default:
      return { ...base, status: 'pending' };
  }
}

/** The result an entry holds, or the error that explains why it holds none. */
export function resultOf<R extends Revision>(
  entry: JournalEntry,
  settled: Promise<Settlement<R>>,
): PaymentResult<R> {
  if (entry.abort && entry.phase !== 'CONFLICT') {
    throw abortedError(`payment ${entry.externalId} was aborted`, entry.externalId);
  }
  if (entry.phase === 'REFUSED' || !entry.transaction) throw storedError(entry);
  const transaction = entry.transaction as TransactionOf<R>;
  const resultCode = transaction.result_code ?? entry.confirm?.resultCode ?? 'UNKNOWN';
  return {
    externalId: entry.externalId,
    terminalId: entry.terminalId,
    success: resultCode === SUCCESS,
    resultCode,
    transaction,
    receipts: {
      ...(transaction.receipt_details_customer
        ? { customer: transaction.receipt_details_customer }
        : {}),
      ...(transaction.receipt_details_merchant
        ? { merchant: transaction.receipt_details_merchant }
        : {}),
    },
    settled,
  };
}
