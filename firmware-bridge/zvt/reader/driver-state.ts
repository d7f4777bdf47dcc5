/**
 * The ZVT driver's own durable record of its transactions. ZVT has no transaction ids: the
 * terminal knows receipt and trace numbers, the agent knows its transaction id. The driver
 * writes here, before it sends a command, which transaction the command is for and the
 * trace number of the terminal's last transaction before it; after a crash, the terminal's
 * last transaction (Repeat Receipt) is this one exactly when its trace number moved on.
 *
 * ```
 *   {"format":"tps-zvt-driver-state","version":1,"last_trace":17,"records":[
 *     {"transaction_id":"tx-1","kind":"PURCHASE","amount":990,"currency":"EUR",
 *      "phase":"COMPLETED","trace_before":16,"receipt_number":17,"trace_number":17,...}]}
 * ```
 *
 * One small JSON file, replaced whole on each change (written to FILE.tmp, fsynced,
 * renamed over FILE, the directory fsynced): a crash leaves the old or the new state,
 * never half. The oldest final records are forgotten past `maxRecords`. A file that does
 * not parse stops the driver from opening: forgetting a payment in flight is worse.
 */
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  writeSync,
} from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import {
  Amount,
  Currency,
  Description,
  ResultCode,
  TransactionId,
} from '../../../protocol/fields.js';
import { TransactionResultDetails } from '../../../protocol/terminal-link.js';

export const DEFAULT_MAX_RECORDS = 500;

const Trace = z.number().int().min(0).max(99_999_999);

export const ZvtDriverRecord = z.object({
  transaction_id: TransactionId,
  kind: z.enum(['PURCHASE', 'REFUND', 'ACCOUNT_CHECK']),
  amount: Amount,
  currency: Currency,
  /** IN_PROGRESS: the command may have reached the terminal; its outcome is not known yet. */
  phase: z.enum(['IN_PROGRESS', 'COMPLETED', 'CANCELLED']),
  /** The terminal's last trace number before the command left (0: it had none). */
  trace_before: Trace.optional(),
  /** Of the terminal's 04 0F for this transaction. */
  receipt_number: z.number().int().min(0).max(9999).optional(),
  trace_number: Trace.optional(),
  /** Recorded and waiting for its turn; the command has not left. */
  queued: z.boolean().optional(),
  /** The agent asked to cancel it (06 B0 sent): a 6C abort is then CANCELLED. */
  cancel_requested: z.boolean().optional(),
  /** A reversal (06 30) was sent for it and its answer not yet seen. */
  reversal_pending: z.boolean().optional(),
  result_code: ResultCode.optional(),
  result_description: Description.optional(),
  details: TransactionResultDetails.optional(),
});
export type ZvtDriverRecord = z.infer<typeof ZvtDriverRecord>;

export const ZvtDriverStateFile = z.object({
  format: z.literal('tps-zvt-driver-state'),
  version: z.literal(1),
  /** The trace number of the terminal's last transaction as far as the driver knows. */
  last_trace: Trace.optional(),
  /** Oldest first; the last is the last transaction started. */
  records: z.array(ZvtDriverRecord),
});
export type ZvtDriverStateFile = z.infer<typeof ZvtDriverStateFile>;

export class ZvtDriverState {
  private state: ZvtDriverStateFile;

  constructor(
    readonly file: string,
    private readonly maxRecords = DEFAULT_MAX_RECORDS,
  ) {
    mkdirSync(path.dirname(file), { recursive: true });
    this.state = existsSync(file)
      ? parseStateFile(file)
      : { format: 'tps-zvt-driver-state', version: 1, records: [] };
  }

  get lastTrace(): number | undefined {
    return this.state.last_trace;
  }

  get(transactionId: string): ZvtDriverRecord | undefined {
    return this.state.records.find((record) => record.transaction_id === transactionId);
  }

  last(): ZvtDriverRecord | undefined {
    return this.state.records.at(-1);
  }

  /** Stores the record (a new one becomes the last); durable on return. */
  put(record: ZvtDriverRecord, lastTrace?: number): ZvtDriverRecord {
    const records = this.state.records.filter((r) => r.transaction_id !== record.transaction_id);
    const at = this.state.records.findIndex((r) => r.transaction_id === record.transaction_id);
    if (at >= 0) records.splice(at, 0, record);
    else records.push(record);
    while (records.length > this.maxRecords) {
      const oldest = records.findIndex((r) => r.phase !== 'IN_PROGRESS');
      if (oldest < 0) break;
      records.splice(oldest, 1);
    }
    this.write({
      ...this.state,
      ...(lastTrace === undefined ? {} : { last_trace: lastTrace }),
      records,
    });
    return record;
  }

  setLastTrace(trace: number): void {
    if (this.state.last_trace === trace) return;
    this.write({ ...this.state, last_trace: trace });
  }

  private write(next: ZvtDriverStateFile): void {
    const tmp = `${this.file}.tmp`;
    const fd = openSync(tmp, 'w', 0o600);
    try {
      writeSync(fd, `${JSON.stringify(next)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, this.file);
    try {
      const dir = openSync(path.dirname(this.file), 'r');
      fsyncSync(dir);
      closeSync(dir);
    } catch {
      // Directories cannot be fsynced everywhere (Windows); the rename is still atomic.
    }
    this.state = next;
  }
}

export function parseStateFile(file: string): ZvtDriverStateFile {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new Error(`the ZVT driver state ${file} is not JSON: ${(error as Error).message}`);
  }
  const parsed = ZvtDriverStateFile.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(
      `the ZVT driver state ${file} is not valid (${issue?.path.join('.') || 'file'}: ${issue?.message}); move it away only once every transaction in it is settled`,
    );
  }
  return parsed.data;
}
