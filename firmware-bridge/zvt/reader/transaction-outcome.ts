/**
 * What a ZVT command's outcome means for the agent's transaction: the final record
 * (phase, result code, details, receipts) from the PT's 04 0F, 06 0F / 06 1E or 84 xx.
 */
import type { ZvtOutcome } from '../session.js';
import type { ZvtDriverRecord } from './driver-state.js';
import type { ZvtProfile } from './profiles.js';
import { receiptsOf } from './receipt-text.js';
import { detailsOf } from './result-details.js';
import { refusalOfCode, resultOfCode, type MappedResult } from './result-codes.js';

/** ZVT 6C: aborted (abort key, timeout, or the ECR's 06 B0). */
export const ZVT_ABORTED = 0x6c;
const ZVT_SYSTEM_ERROR = 0xff;

export const CANCELLED_BY_REGISTER: MappedResult = {
  result_code: 'ABORTED',
  result_description: 'Cancelled by the register',
};
export const REVERSED: MappedResult = {
  result_code: 'REVERSED',
  result_description: 'Reversed by the register; nothing is charged',
};
export const UNKNOWN_TRANSACTION: MappedResult = {
  result_code: 'ABORTED',
  result_description: 'The reader has no record of this transaction',
};
export const NOT_STARTED: MappedResult = {
  result_code: 'ABORTED',
  result_description: 'The terminal never started it: its last transaction is an earlier one',
};
export const OUTCOME_UNKNOWN: MappedResult = {
  result_code: 'OUTCOME_UNKNOWN',
  result_description:
    'The terminal did not report its last transaction: check its journal before charging again',
};
export const BUSY: MappedResult = {
  result_code: 'READER_BUSY',
  result_description: 'The reader is busy with another transaction',
};

/** A record made final with a mapped result. */
export function finalRecord(
  record: ZvtDriverRecord,
  phase: 'COMPLETED' | 'CANCELLED',
  result: MappedResult,
  extra: Partial<ZvtDriverRecord> = {},
): ZvtDriverRecord {
  const { cancel_requested: _c, reversal_pending: _r, queued: _q, ...rest } = record;
  return { ...rest, ...extra, phase, ...result };
}

/** The record of a payment or refund once its command (or a Repeat Receipt for it) ended. */
export function recordFromOutcome(
  record: ZvtDriverRecord,
  outcome: ZvtOutcome,
  profile: ZvtProfile,
  now: Date,
): ZvtDriverRecord {
  if (outcome.kind === 'refused') {
    const code = outcome.resultCode ?? ZVT_SYSTEM_ERROR;
    const mapped = refusalOfCode(code);
    // Nothing ran: a busy terminal is the native reader's busy (CANCELLED, not charged).
    return finalRecord(
      record,
      mapped.result_code === 'READER_BUSY' ? 'CANCELLED' : 'COMPLETED',
      mapped,
      {
        details: { authorized_amount: 0 },
      },
    );
  }
  const code =
    outcome.resultCode ??
    (outcome.kind === 'completed' ? 0 : record.cancel_requested ? ZVT_ABORTED : ZVT_SYSTEM_ERROR);
  const approved = code === 0 && outcome.kind === 'completed';
  const values = outcome.result ?? {};
  const info = outcome.statusInformation.at(-1);
  const details = detailsOf(values, info?.bmps ?? [], {
    approved,
    requested: record.amount,
    now,
  });
  const receipts = receiptsOf(outcome.printLines, outcome.printTextBlocks, profile.charset);
  if (receipts.customer) details.receipt_details_customer = receipts.customer;
  if (receipts.merchant) details.receipt_details_merchant = receipts.merchant;
  const mapped = approved ? resultOfCode(0) : resultOfCode(code === 0 ? ZVT_SYSTEM_ERROR : code);
  const cancelled = code === ZVT_ABORTED && record.cancel_requested === true;
  return finalRecord(
    record,
    cancelled ? 'CANCELLED' : 'COMPLETED',
    cancelled ? CANCELLED_BY_REGISTER : mapped,
    {
      details,
      ...(values.receiptNumber === undefined ? {} : { receipt_number: values.receiptNumber }),
      ...(values.traceNumber === undefined ? {} : { trace_number: values.traceNumber }),
    },
  );
}

/** Whether the PT refused because it still works on something (84 83 / 84 9C). */
export function isBusyRefusal(outcome: ZvtOutcome): boolean {
  return outcome.kind === 'refused' && (outcome.resultCode === 0x83 || outcome.resultCode === 0x9c);
}

/**
 * The record as the PT's last transaction says (a Repeat Receipt's outcome, service 01):
 * its 04 0F is this transaction's when its trace number moved on from `trace_before`.
 * Without `trace_before` (the driver never learned the PT's numbers), it is this one's
 * when the amount is this one's, and this one never ran when it is not (the ECR controls
 * payments: nothing else runs on the PT after it).
 */
export function recordFromRepeatReceipt(
  record: ZvtDriverRecord,
  outcome: ZvtOutcome,
  profile: ZvtProfile,
  now: Date,
): ZvtDriverRecord {
  const trace = outcome.result?.traceNumber;
  const none = { details: { authorized_amount: 0 } };
  if (outcome.statusInformation.length > 0 && trace !== undefined) {
    const earlier =
      record.trace_before === undefined
        ? outcome.result?.amount !== record.amount
        : trace === record.trace_before;
    if (earlier) return finalRecord(record, 'CANCELLED', NOT_STARTED, none);
    const code = outcome.result?.resultCode;
    if (code === undefined) return finalRecord(record, 'COMPLETED', OUTCOME_UNKNOWN, none);
    return recordFromOutcome(
      record,
      { ...outcome, kind: code === 0 ? 'completed' : 'aborted', resultCode: code },
      profile,
      now,
    );
  }
  if (outcome.kind === 'completed' && record.trace_before === 0) {
    // The PT had no transaction before this one and has none now.
    return finalRecord(record, 'CANCELLED', NOT_STARTED, none);
  }
  return finalRecord(record, 'COMPLETED', OUTCOME_UNKNOWN, none);
}
