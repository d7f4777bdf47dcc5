/**
 * Journal first (architecture invariant 4): every change to a transaction's row is one
 * commit of the journal, with the reports it owes the relay and the command that caused
 * it, stamped with the agent's clock; the link is told when reports wait in the outbox.
 */
import type { Logger } from 'pino';
import type { Clock } from '../common/clock.js';
import { FREE_TEXT, maskFreeText, maskReportText } from '../protocol/free-text.js';
import type { TerminalReport } from '../protocol/terminal-link.js';
import type { TransactionRecord } from '../protocol/transaction-rules/decision.js';
import type { Journal, TransactionRow } from './journal.js';
import { withoutCardNumbers, type commandRow } from './reports.js';

export interface JournalWriterOptions {
  journal: Journal;
  clock: Clock;
  /** New reports are in the outbox (the link publishes them). */
  reported: () => void;
  /** Hears the security event of a card number masked in a report. */
  logger: Pick<Logger, 'warn'>;
}

export class JournalWriter {
  constructor(private readonly options: JournalWriterOptions) {}

  /**
   * Writes `row` with `changes`, its reports and the command that caused them, in one
   * commit. Card numbers in the free text of the reader's result are masked first, in the
   * reports and in the journal's own copy alike: neither the relay nor the file gets one.
   */
  write(
    row: TransactionRow,
    changes: Partial<TransactionRow>,
    reports: TerminalReport[] = [],
    entry: { command?: ReturnType<typeof commandRow>; local?: TransactionRecord } = {},
  ): void {
    const { result, ...rest } = changes;
    const kept: Partial<TransactionRow> = result
      ? { ...rest, result: maskFreeText(result, FREE_TEXT.transaction).value }
      : rest;
    const sent = reports.map((report) =>
      withoutCardNumbers(this.options.logger, 'report', maskReportText(report), {
        transactionId: row.transaction_id,
      }),
    );
    this.options.journal.record({
      ...entry,
      transaction: { ...row, ...kept, updated_at: this.options.clock.now().toISOString() },
      reports: sent,
    });
    if (sent.length) this.options.reported();
  }

  /** A transaction's first row, not yet written. */
  newRow(
    id: string,
    state: TransactionRow['state'],
    extra: Partial<TransactionRow>,
  ): TransactionRow {
    const at = this.options.clock.now().toISOString();
    return {
      transaction_id: id,
      state,
      cancel_requested: false,
      continue_requested: false,
      created_at: at,
      updated_at: at,
      ...extra,
    };
  }
}
