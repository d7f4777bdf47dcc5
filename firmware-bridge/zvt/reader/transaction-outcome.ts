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
