/**
 * The ZVT driver's answers in the reader port's terms: its capabilities, result events and
 * last-transaction records from its own records, and ZVT errors as the port's error type.
 */
import type { ReaderCapabilities } from '../../../protocol/reader-capabilities.js';
import type { LastTransactionRecord, ReaderResult } from '../../reader/card-reader.js';
import { SerialLinkError } from '../../serial/errors.js';
import type { ZvtError } from '../errors.js';
import type { ZvtDriverRecord } from './driver-state.js';
import type { ZvtProfile } from './profiles.js';

/** What a ZVT terminal can do for the agent under a profile. */
export function zvtCapabilities(profile: ZvtProfile): ReaderCapabilities {
  return {
    protocol: 'zvt',
    pause_on_customer_identified: false,
    account_check: false,
    cashback: false,
    refund: true,
    cancel: profile.abort,
  };
}

/** The result event of a final record. */
export function resultOf(record: ZvtDriverRecord): ReaderResult | undefined {
  if (record.phase === 'IN_PROGRESS' || record.result_code === undefined) return undefined;
  return {
    transaction_id: record.transaction_id,
    phase: record.phase,
    result_code: record.result_code,
    ...(record.result_description ? { result_description: record.result_description } : {}),
    ...(record.details ? { details: record.details } : {}),
  };
}

export function lastRecordOf(record: ZvtDriverRecord): LastTransactionRecord {
  const result = resultOf(record);
  if (!result || record.reversal_pending) {
    return { transaction_id: record.transaction_id, phase: 'IN_PROGRESS' };
  }
  return result;
}

/** A ZvtError as the port's error type: branch on `code` and `disconnected`. */
export function linkError(error: unknown): SerialLinkError {
  if (error instanceof SerialLinkError) return error;
  const zvt = error as Partial<ZvtError>;
  const message = error instanceof Error ? error.message : String(error);
  switch (zvt.code) {
    case 'NO_LINK_ACK':
    case 'T3_TIMEOUT':
      return new SerialLinkError('ACK_TIMEOUT', message, { cause: error });
    // LIMIT_EXCEEDED: the session dropped the line, the same as a lost one.
    case 'PORT_CLOSED':
    case 'LIMIT_EXCEEDED':
      return new SerialLinkError('PORT_CLOSED', message, { cause: error });
    case 'CLOSED':
      return new SerialLinkError('LINK_CLOSED', message, { cause: error });
    case 'T4_TIMEOUT':
      return new SerialLinkError('ANSWER_TIMEOUT', message, { cause: error });
    default:
      return new SerialLinkError('REJECTED', message, { cause: error, reason: message });
  }
}
