/**
 * When the agent does not know how a transaction stands (at start, after a reader call
 * failed, when a running one went quiet), the reader's own record decides: it is asked,
 * with a back-off while it does not answer, and recovery.ts's decision is carried out.
 */
import type { Logger } from 'pino';
import type { JournalWriter } from './journal-writer.js';
import type { Journal, TransactionRow } from './journal.js';
import type { ReaderPort } from './ports.js';
import type { ReaderSlot } from './reader-slot.js';
import { reconcile, type Outcome, type Reconciliation } from './recovery.js';
import { NEVER_RAN, errorInfo, transactionReport } from './reports.js';

export interface ReconcilerOptions {
  journal: Journal;
  reader: ReaderPort;
  writer: JournalWriter;
  slot: ReaderSlot;
  logger: Logger;
}

export class Reconciler {
  private readonly reconciling = new Set<string>();

  constructor(private readonly options: ReconcilerOptions) {}

  async reconcile(id: string): Promise<void> {
    const { slot } = this.options;
    if (this.reconciling.has(id) || slot.stopped) return;
    this.reconciling.add(id);
    try {
      let record;
      for (;;) {
        try {
          record = await this.options.reader.lastTransaction();
          break;
        } catch (error) {
          if (slot.stopped) return;
          const { delayMs, waited } = slot.backOff(id);
          this.options.logger.warn(
            { err: errorInfo(error), transactionId: id, delayMs },
            'the reader does not answer',
          );
          await waited;
          if (slot.stopped) return;
        }
      }
      if (slot.stopped) return;
      const row = this.options.journal.transaction(id);
      if (!row) return;
      const decision = reconcile(row, record, { startDelivered: slot.startDelivered(id) });
      this.options.logger.info(
        { transactionId: id, record, decision: decision.action },
        'reconciled with the reader',
      );
      this.apply(row, decision);
    } finally {
      this.reconciling.delete(id);
    }
  }

  /** The reader charged a transaction the agent had reported as cancelled: reverse it. */
  chargedAfterCancel(row: TransactionRow, outcome: Outcome): void {
    this.options.logger.error(
      { transactionId: row.transaction_id },
      'charged after a cancel: reversing',
    );
    this.options.writer.write(row, { state: 'COMPLETED', cancel_requested: true, result: outcome });
    this.options.slot.enqueueReverse(row.transaction_id);
  }

  private apply(row: TransactionRow, decision: Reconciliation): void {
    const id = row.transaction_id;
    const { reader, slot, writer } = this.options;
    switch (decision.action) {
      case 'none':
        return;
      case 'never-ran':
        return slot.finalize(row, 'CANCELLED', NEVER_RAN);
      case 'running':
        slot.adopt(id);
        if (row.state !== 'RUNNING') writer.write(row, { state: 'RUNNING' });
        if (decision.cancel) slot.call(id, 'cancel', () => reader.cancel(id));
        return;
      case 'paused': {
        slot.adopt(id);
        const identity = decision.record.details?.customer_identity;
        const report = transactionReport(
          id,
          'CUSTOMER_IDENTIFIED',
          identity ? { details: { customer_identity: identity } } : {},
        );
        if (row.state !== 'PAUSED')
          writer.write(row, { state: 'PAUSED' }, decision.report ? [report] : []);
        if (decision.cancel) slot.call(id, 'cancel', () => reader.cancel(id));
        return slot.changed();
      }
      case 'resend-continue':
        slot.adopt(id);
        return slot.call(id, 'continue', () => reader.continue(id, row.continue_amount));
      case 'final':
        slot.finalize(row, decision.phase, decision.outcome);
        if (decision.reverse) slot.enqueueReverse(id);
        return;
      case 'reverse':
        slot.release(id); // frees the reader only if it was running this one
        return slot.enqueueReverse(id);
      case 'reversed':
        writer.write(row, { state: 'CANCELLED', result: decision.outcome }, [
          transactionReport(id, 'CANCELLED', decision.outcome),
        ]);
        return slot.release(id);
      case 'charged-after-cancel':
        return this.chargedAfterCancel(row, decision.outcome);
    }
  }
}
