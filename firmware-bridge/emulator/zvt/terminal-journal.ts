/**
 * The emulated PT's bookkeeping over its memory: numbering (receipt and trace numbers from
 * the entry's seq), the open batch, which payments a reversal may still undo, and the
 * totals an end-of-day closes. Kept apart from the protocol flows of zvt-terminal.ts.
 */
import type { Bmp } from '../../zvt/bmp.js';
import { bmpsFrom, TOTALS_GROUPS, type IndividualTotals } from '../../zvt/bmp-values.js';
import { messageBytes } from '../../zvt/messages.js';
import type { JournalEntry, TerminalMemory } from './terminal-memory.js';
import { RESULT_CODES, totalsGroupOf } from './terminal-outcomes.js';

export class TerminalJournal {
  constructor(
    readonly memory: TerminalMemory,
    private readonly now: () => Date,
    private readonly written: (entry: JournalEntry) => void,
  ) {}

  /**
   * At power-on: what was still running stopped with the power, nothing charged (6C); its
   * 04 0F is what Repeat Receipt will tell the ECR.
   */
  recoverInterrupted(): void {
    for (const entry of this.memory.all()) {
      if (entry.phase !== 'IN_PROGRESS') continue;
      const { amount, currency, trace_number, receipt_number } = entry;
      const resultCode = RESULT_CODES.ABORTED;
      const info = bmpsFrom({
        resultCode,
        amount,
        currency,
        traceNumber: trace_number,
        receiptNumber: receipt_number,
      });
      this.finish(entry, { code: resultCode, approved: false, info, receipts: [] });
    }
  }

  /** The last finished entry (Repeat Receipt). */
  last(): JournalEntry | undefined {
    const last = this.memory.last();
    return last?.phase === 'DONE' ? last : undefined;
  }

  /** A new entry, IN_PROGRESS, numbered after the last one; written before anything is said. */
  begin(
    kind: JournalEntry['kind'],
    amount: number,
    currency: number,
    extra: Partial<JournalEntry> = {},
  ): JournalEntry {
    const seq = (this.memory.last()?.seq ?? 0) + 1;
    return this.write({
      seq,
      kind,
      phase: 'IN_PROGRESS',
      receipt_number: ((seq - 1) % 9999) + 1,
      trace_number: ((seq - 1) % 999_999) + 1,
      batch: this.openBatch(),
      amount,
      currency,
      approved: false,
      receipts: [],
      ...extra,
    });
  }

  /** The outcome, with the 04 0F about to be sent and the receipts about to be printed. */
  finish(
    entry: JournalEntry,
    outcome: { code: number; approved: boolean; info: Bmp[]; receipts: string[][] },
    extra: Partial<JournalEntry> = {},
  ): JournalEntry {
    const info = messageBytes({ type: 'status-information', bmps: outcome.info });
    return this.write({
      ...entry,
      ...extra,
      phase: 'DONE',
      result_code: outcome.code,
      approved: outcome.approved,
      status_information: info.toString('hex'),
      receipts: outcome.receipts,
    });
  }

  /** The batch the next entries belong to: one past the last closed by an end-of-day. */
  openBatch(): number {
    const closed = this.memory.all().filter((e) => e.kind === 'END_OF_DAY' && e.phase === 'DONE');
    return (closed.at(-1)?.batch ?? 0) + 1;
  }

  /** The last payment of the open batch with this receipt number, and whether it was reversed. */
  payment(receiptNumber: number): { entry: JournalEntry; reversed: boolean } | undefined {
    const batch = this.openBatch();
    const entry = this.memory
      .all()
      .filter((e) => e.kind === 'PAYMENT' && e.phase === 'DONE' && e.batch === batch)
      .filter((e) => e.receipt_number === receiptNumber)
      .pop();
    return entry && { entry, reversed: this.reversed().has(entry.seq) };
  }

  /** The approved, unreversed payments of the open batch, and their BMP 60 totals. */
  batchTotals(): { total: number; totals: IndividualTotals; count: number } {
    const batch = this.openBatch();
    const reversed = this.reversed();
    const payments = this.memory
      .all()
      .filter((e) => e.batch === batch && e.kind === 'PAYMENT' && e.approved)
      .filter((e) => !reversed.has(e.seq));
    const groups = Object.fromEntries(
      TOTALS_GROUPS.map((group) => [group, { count: 0, total: 0 }]),
    ) as IndividualTotals['groups'];
    for (const payment of payments) {
      const group = groups[totalsGroupOf(payment.scheme)];
      group.count = Math.min(255, group.count + 1);
      group.total += payment.amount;
    }
    return {
      total: payments.reduce((sum, payment) => sum + payment.amount, 0),
      count: payments.length,
      totals: {
        firstReceipt: payments[0]?.receipt_number ?? 0,
        lastReceipt: payments.at(-1)?.receipt_number ?? 0,
        groups,
      },
    };
  }

  /**
   * Whether the open batch is overdue for its end-of-day: it holds `afterPayments`
   * payments or refunds or more, or its first entry is `afterHours` old or older.
   */
  endOfDayDue(limits: { afterPayments?: number; afterHours?: number }): boolean {
    const batch = this.openBatch();
    const open = this.memory.all().filter((e) => e.batch === batch && e.kind !== 'END_OF_DAY');
    const { afterPayments, afterHours } = limits;
    const payments = open.filter((e) => e.kind === 'PAYMENT' || e.kind === 'REFUND').length;
    if (afterPayments !== undefined && payments >= afterPayments) return true;
    const first = open[0];
    if (afterHours === undefined || !first) return false;
    return this.now().getTime() - Date.parse(first.at) >= afterHours * 3_600_000;
  }

  /** Seqs of the payments an approved reversal undid. */
  private reversed(): Set<number> {
    const reversals = this.memory.all().filter((e) => e.kind === 'REVERSAL' && e.approved);
    return new Set(reversals.map((e) => e.reverses ?? 0));
  }

  private write(entry: Omit<JournalEntry, 'at'>): JournalEntry {
    const written = { ...entry, at: this.now().toISOString() };
    this.memory.put(written);
    this.written(written);
    return written;
  }
}
