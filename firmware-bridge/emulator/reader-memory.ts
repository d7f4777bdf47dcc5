/**
 * The emulated reader's non-volatile memory: its record of every transaction it was told
 * about, by transaction_id. It is what makes the reader refuse to run a transaction twice
 * and answer `last_transaction.query` truthfully after the host (or the reader) crashed.
 *
 * `put()` returns once the record would survive a power loss; the firmware writes before
 * it tells the host anything. Two implementations: `InMemoryReaderMemory` (in-process
 * simulators, tests) and `FileReaderMemory` (an emulator in its own process).
 */
import { z } from 'zod';
import { Amount, Description, ResultCode, TransactionId } from '../../protocol/fields.js';
import { TransactionResultDetails } from '../../protocol/terminal-link.js';
import { LastTransactionPhase, StartTransaction } from '../serial/messages.js';

const { v: _v, type: _t, ...startShape } = StartTransaction.shape;
/** The start command as the reader received it, without its envelope. */
export const StoredStart = z.object(startShape);

export const ReaderRecord = z.object({
  transaction_id: TransactionId,
  /**
   * Order of the transactions this reader started: 1, 2, ... The highest is the last
   * transaction. 0: a transaction it never started, recorded only because it told the host
   * that it will not charge it (a cancel for an unknown id, a start while busy).
   */
  sequence: z.number().int().min(0),
  start: StoredStart.optional(),
  /** The amount of a `transaction.continue` that brought a new one. */
  continued_amount: Amount.optional(),
  phase: LastTransactionPhase,
  result_code: ResultCode.optional(),
  result_description: Description.optional(),
  details: TransactionResultDetails.optional(),
  /** When the record was written, ISO 8601. */
  updated_at: z.string(),
});
export type ReaderRecord = z.infer<typeof ReaderRecord>;

export interface ReaderMemory {
  get(transactionId: string): ReaderRecord | undefined;
  /** The started transaction with the highest sequence. */
  last(): ReaderRecord | undefined;
  /** Every record, oldest write first. */
  all(): ReaderRecord[];
  /** Stores the record, replacing the one with its transaction_id; durable on return. */
  put(record: ReaderRecord): void;
  close(): void;
}

/** Records kept by default: past it, the oldest are forgotten (a real reader's flash is finite). */
export const DEFAULT_MAX_RECORDS = 10_000;

export class InMemoryReaderMemory implements ReaderMemory {
  /** In write order: re-writing a record moves it to the end. */
  protected readonly records = new Map<string, ReaderRecord>();
  private lastRecord: ReaderRecord | undefined;

  constructor(protected readonly maxRecords = DEFAULT_MAX_RECORDS) {}

  get(transactionId: string): ReaderRecord | undefined {
    return this.records.get(transactionId);
  }

  last(): ReaderRecord | undefined {
    return this.lastRecord;
  }

  all(): ReaderRecord[] {
    return [...this.records.values()];
  }

  put(record: ReaderRecord): void {
    this.remember(record);
  }

  close(): void {}

  /** Updates the index, forgetting the oldest records (never the last) past maxRecords. */
  protected remember(record: ReaderRecord): void {
    this.records.delete(record.transaction_id);
    this.records.set(record.transaction_id, record);
    if (record.sequence > 0 && record.sequence >= (this.lastRecord?.sequence ?? 0)) {
      this.lastRecord = record;
    }
    for (const [id, kept] of this.records) {
      if (this.records.size <= this.maxRecords) break;
      if (kept !== this.lastRecord) this.records.delete(id);
    }
  }
}
