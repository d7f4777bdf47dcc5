/**
 * The executor: the relay's commands in, the card reader driven, every state change out as
 * a report through the journal's outbox. Its rules, in the order they are checked:
 *
 * - a command_id seen before is acknowledged again with its first outcome and not applied;
 * - journal first, then acknowledge, then act (architecture invariant 4): a command's
 *   effect on the journal and its outbox reports are one commit, the cmd-ack follows, the
 *   reader call comes last;
 * - a transaction never runs twice: a start for a transaction the journal knows, in any
 *   state, is acknowledged and does nothing else;
 * - the reader does one thing at a time: starts and reversals queue behind the running
 *   transaction, in arrival order;
 * - when a reader command fails (delivery unknown), the reader's own record decides
 *   (recovery.ts), after a back-off, as it does at start and as a watchdog while a
 *   transaction runs.
 *
 * docs/agent.md has the table of commands and outcomes.
 */
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { CommandMessage } from '../protocol/mqtt.js';
import type {
  StartTransactionCommand,
  TerminalCommand,
  TerminalReport,
} from '../protocol/terminal-link.js';
import type { TerminalTransactionState } from '../protocol/terminal-status.js';
import { Backoff, type BackoffOptions } from './backoff.js';
import type { Clock, Timers } from './clock.js';
import type { CommandOutcome, Journal, TransactionRow } from './journal.js';
import type { PrinterPort, ReaderIdentified, ReaderPort, ReaderResult } from './ports.js';
import { isOpen, reconcile, reverseOwed, type Outcome, type Reconciliation } from './recovery.js';
import {
  CANCELLED_BEFORE_START,
  EXPIRED,
  NEVER_RAN,
  commandRow,
  errorInfo,
  outcomeOf,
  readerStart,
  transactionIdOf,
  transactionReport,
} from './reports.js';

export interface ExecutorOptions {
  journal: Journal;
  reader: ReaderPort;
  printer?: PrinterPort;
  clock: Clock;
  timers: Timers;
  logger: Logger;
  /** Publishes a cmd-ack (the link). */
  ack: (commandId: string, outcome: CommandOutcome) => void;
  /** New reports are in the outbox (the link publishes them). */
  reported: () => void;
  /** Ask the reader's record this long after the last sign of a running transaction (default 15 s). */
  watchMs?: number;
  /** Back-off between attempts when the reader does not answer (default 500 ms to 30 s). */
  retry?: BackoffOptions;
}

type Job = { kind: 'start' | 'reverse'; id: string };
type Busy = { kind: 'transaction' | 'reverse'; id: string };

export class Executor extends EventEmitter<{ state: [TerminalTransactionState] }> {
  private busy: Busy | undefined;
  private readonly jobs: Job[] = [];
  private recovering = false;
  private stopped = false;
  /** Transactions whose start the reader acknowledged in this process's life. */
  private readonly delivered = new Set<string>();
  private readonly reconciling = new Set<string>();
  private readonly retries = new Map<string, Backoff>();
  private readonly timers = new Set<unknown>();
  private watchTimer: unknown;
  private printing: Promise<void> = Promise.resolve();
  private lastState: TerminalTransactionState = 'READY';
  private readonly readerListeners = {
    customer_identified: (event: ReaderIdentified) => this.onIdentified(event),
    result: (event: ReaderResult) => this.onResult(event),
  };

  constructor(private readonly options: ExecutorOptions) {
    super();
    options.reader.on('customer_identified', this.readerListeners.customer_identified);
    options.reader.on('result', this.readerListeners.result);
  }

  get transactionState(): TerminalTransactionState {
    if (this.recovering || this.busy?.kind === 'reverse') return 'BUSY';
    if (!this.busy) return 'READY';
    const row = this.options.journal.transaction(this.busy.id);
    return row?.state === 'PAUSED' ? 'AWAITING_CONTINUE' : 'PROCESSING';
  }

  /**
   * Applies one command from the relay. Synchronous up to the acknowledgement, so the link
   * calls it before the broker's PUBACK; reader calls run after.
   */
  handle(message: CommandMessage): void {
    if (this.stopped) return;
    const { command } = message;
    const seen = this.options.journal.command(command.command_id);
    if (seen) {
      this.options.logger.info(
        { commandId: command.command_id },
        'command seen before: not applied again',
      );
      this.options.ack(command.command_id, seen.outcome);
      return;
    }
    this.options.logger.info(
      {
        commandId: command.command_id,
        type: command.type,
        transactionId: transactionIdOf(command),
      },
      'command received',
    );
    switch (command.type) {
      case 'transaction.start':
        return this.start(command);
      case 'transaction.continue':
        return this.continue(command);
      case 'transaction.cancel':
        return this.cancel(command);
      case 'print':
        return this.print(command);
    }
  }

  /** At start: asks the reader about every open transaction before starting anything new. */
  async recover(): Promise<void> {
    const open = this.options.journal.openTransactions();
    if (open.length === 0) return;
    this.recovering = true;
    this.changed();
    this.options.logger.info(
      { count: open.length },
      'reconciling open transactions with the reader',
    );
    for (const row of open) await this.reconcile(row.transaction_id);
    this.recovering = false;
    this.changed();
    this.pump();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.options.reader.off('customer_identified', this.readerListeners.customer_identified);
    this.options.reader.off('result', this.readerListeners.result);
    this.options.timers.clearTimeout(this.watchTimer);
    for (const timer of this.timers) this.options.timers.clearTimeout(timer);
    await this.printing;
  }

  // ---- commands ----

  private start(command: StartTransactionCommand): void {
    const { journal, clock } = this.options;
    const id = command.transaction_id;
    const expiresAt = command.expires_at;
    const entry = { command: commandRow(command, 'ACCEPTED') };
    if (journal.transaction(id)) {
      journal.record(entry);
      this.options.ack(command.command_id, 'ACCEPTED');
      this.options.logger.info(
        { transactionId: id },
        'start for a known transaction: not run again',
      );
      return;
    }
    if (expiresAt !== undefined && Date.parse(expiresAt) < clock.now().getTime()) {
      journal.record({
        command: commandRow(command, 'EXPIRED'),
        transaction: this.newRow(id, 'CANCELLED', {
          request: readerStart(command),
          result: EXPIRED,
        }),
        reports: [transactionReport(id, 'CANCELLED', EXPIRED)],
      });
      this.options.ack(command.command_id, 'EXPIRED');
      this.options.logger.warn({ transactionId: id, expiresAt }, 'start refused: expired');
      this.options.reported();
      return;
    }
    journal.record({
      ...entry,
      transaction: this.newRow(id, 'QUEUED', { request: readerStart(command) }),
    });
    this.options.ack(command.command_id, 'ACCEPTED');
    this.jobs.push({ kind: 'start', id });
    this.pump();
  }

  private continue(command: TerminalCommand & { type: 'transaction.continue' }): void {
    const id = command.transaction_id;
    const row = this.options.journal.transaction(id);
    const entry = { command: commandRow(command, 'ACCEPTED') };
    if (row?.state !== 'PAUSED' || row.continue_requested) {
      this.options.journal.record(entry);
      this.options.ack(command.command_id, 'ACCEPTED');
      this.options.logger.warn(
        { transactionId: id, state: row?.state },
        'continue ignored: not paused',
      );
      return;
    }
    const amount = command.requested_amount;
    this.write(
      row,
      { state: 'RUNNING', continue_requested: true, continue_amount: amount },
      [],
      entry,
    );
    this.options.ack(command.command_id, 'ACCEPTED');
    this.changed();
    this.armWatch();
    this.call(id, 'continue', () => this.options.reader.continue(id, amount));
  }

  private cancel(command: TerminalCommand & { type: 'transaction.cancel' }): void {
    const id = command.transaction_id;
    const { journal, logger } = this.options;
    const row = journal.transaction(id);
    const entry = { command: commandRow(command, 'ACCEPTED') };
    const ack = () => this.options.ack(command.command_id, 'ACCEPTED');
    if (!row) {
      // Never started: remember it, so that a late start is refused.
      journal.record({
        ...entry,
        transaction: this.newRow(id, 'CANCELLED', {
          cancel_requested: true,
          result: CANCELLED_BEFORE_START,
        }),
      });
      ack();
      logger.info({ transactionId: id }, 'cancel before start: the start will be refused');
      return;
    }
    if (row.state === 'QUEUED') {
      const outcome = CANCELLED_BEFORE_START;
      this.write(
        row,
        { state: 'CANCELLED', cancel_requested: true, result: outcome },
        [transactionReport(id, 'CANCELLED', outcome)],
        entry,
      );
      ack();
      const queued = this.jobs.findIndex((job) => job.kind === 'start' && job.id === id);
      if (queued >= 0) this.jobs.splice(queued, 1);
      return;
    }
    if (row.state === 'RUNNING' || row.state === 'PAUSED') {
      this.write(row, { cancel_requested: true }, [], entry);
      ack();
      this.call(id, 'cancel', () => this.options.reader.cancel(id));
      return;
    }
    if (row.state === 'COMPLETED' && row.result?.result_code === 'SUCCESS') {
      this.write(row, { cancel_requested: true }, [], entry);
      ack();
      logger.info({ transactionId: id }, 'cancel after success: reversing');
      this.enqueueReverse(id);
      return;
    }
    journal.record(entry);
    ack();
    logger.info(
      { transactionId: id, state: row.state },
      'cancel of a transaction that will not charge',
    );
  }

  private print(command: TerminalCommand & { type: 'print' }): void {
    const png = Buffer.from(command.contents, 'base64');
    this.options.journal.record({ command: commandRow(command, 'ACCEPTED') });
    this.options.ack(command.command_id, 'ACCEPTED');
    const { printer, logger } = this.options;
    if (!printer) {
      logger.warn({ commandId: command.command_id }, 'print job dropped: no printer configured');
      return;
    }
    this.printing = this.printing
      .then(() => printer.print(png))
      .then(
        () => logger.info({ commandId: command.command_id, bytes: png.length }, 'printed'),
        (error: unknown) =>
          logger.error({ err: errorInfo(error), commandId: command.command_id }, 'printing failed'),
      );
  }

  // ---- the reader ----

  private onIdentified(event: ReaderIdentified): void {
    const id = event.transaction_id;
    const row = this.options.journal.transaction(id);
    if (!row) return this.unknown(id, 'customer_identified');
    this.retries.delete(id);
    if (row.state === 'RUNNING' && !row.continue_requested) {
      const report = transactionReport(id, 'CUSTOMER_IDENTIFIED', {
        details: { customer_identity: event.customer_identity },
      });
      this.write(row, { state: 'PAUSED' }, row.cancel_requested ? [] : [report]);
      this.changed();
      this.armWatch();
      if (row.cancel_requested) this.call(id, 'cancel', () => this.options.reader.cancel(id));
    } else if (!isOpen(row) && row.cancel_requested) {
      this.options.logger.error(
        { transactionId: id },
        'the reader paused a cancelled transaction: cancelling',
      );
      this.call(id, 'cancel', () => this.options.reader.cancel(id));
    }
  }

  private onResult(event: ReaderResult): void {
    const id = event.transaction_id;
    const row = this.options.journal.transaction(id);
    if (!row) return this.unknown(id, 'result');
    this.retries.delete(id);
    const outcome = outcomeOf(event);
    const success = event.phase === 'COMPLETED' && event.result_code === 'SUCCESS';
    this.options.logger.info(
      { transactionId: id, phase: event.phase, resultCode: event.result_code },
      'reader result',
    );
    if (isOpen(row)) {
      this.finalize(row, event.phase, outcome);
      if (success && row.cancel_requested) this.enqueueReverse(id);
    } else if (reverseOwed(row)) {
      if (event.phase === 'CANCELLED') {
        this.write(row, { state: 'CANCELLED', result: outcome }, [
          transactionReport(id, 'CANCELLED', outcome),
        ]);
        this.release(id);
      } else {
        this.options.logger.error(
          { transactionId: id, resultCode: event.result_code },
          'reversal not done',
        );
        this.release(id);
        this.retryLater(id);
      }
    } else if (row.state === 'CANCELLED' && success) {
      this.chargedAfterCancel(row, outcome);
    }
  }

  // ---- reconciliation ----

  private async reconcile(id: string): Promise<void> {
    if (this.reconciling.has(id) || this.stopped) return;
    this.reconciling.add(id);
    try {
      let record;
      for (;;) {
        try {
          record = await this.options.reader.lastTransaction();
          break;
        } catch (error) {
          if (this.stopped) return;
          const delay = this.backoff(id).next();
          this.options.logger.warn(
            { err: errorInfo(error), transactionId: id, delayMs: delay },
            'the reader does not answer',
          );
          await new Promise<void>((resolve) => this.later(resolve, delay));
          if (this.stopped) return;
        }
      }
      if (this.stopped) return;
      const row = this.options.journal.transaction(id);
      if (!row) return;
      const decision = reconcile(row, record, { startDelivered: this.delivered.has(id) });
      this.options.logger.info(
        { transactionId: id, record, decision: decision.action },
        'reconciled with the reader',
      );
      this.apply(row, decision);
    } finally {
      this.reconciling.delete(id);
    }
  }

  private apply(row: TransactionRow, decision: Reconciliation): void {
    const id = row.transaction_id;
    const { reader } = this.options;
    switch (decision.action) {
      case 'none':
        return;
      case 'never-ran':
        return this.finalize(row, 'CANCELLED', NEVER_RAN);
      case 'running':
        this.adopt(id);
        if (row.state !== 'RUNNING') this.write(row, { state: 'RUNNING' });
        if (decision.cancel) this.call(id, 'cancel', () => reader.cancel(id));
        return;
      case 'paused': {
        this.adopt(id);
        const identity = decision.record.details?.customer_identity;
        const report = transactionReport(
          id,
          'CUSTOMER_IDENTIFIED',
          identity ? { details: { customer_identity: identity } } : {},
        );
        if (row.state !== 'PAUSED')
          this.write(row, { state: 'PAUSED' }, decision.report ? [report] : []);
        if (decision.cancel) this.call(id, 'cancel', () => reader.cancel(id));
        return this.changed();
      }
      case 'resend-continue':
        this.adopt(id);
        return this.call(id, 'continue', () => reader.continue(id, row.continue_amount));
      case 'final':
        this.finalize(row, decision.phase, decision.outcome);
        if (decision.reverse) this.enqueueReverse(id);
        return;
      case 'reverse':
        if (this.busy?.id === id) this.release(id);
        return this.enqueueReverse(id);
      case 'reversed':
        this.write(row, { state: 'CANCELLED', result: decision.outcome }, [
          transactionReport(id, 'CANCELLED', decision.outcome),
        ]);
        return this.release(id);
      case 'charged-after-cancel':
        return this.chargedAfterCancel(row, decision.outcome);
    }
  }

  /** The reader charged a transaction the agent had reported as cancelled: reverse it. */
  private chargedAfterCancel(row: TransactionRow, outcome: Outcome): void {
    this.options.logger.error(
      { transactionId: row.transaction_id },
      'charged after a cancel: reversing',
    );
    this.write(row, { state: 'COMPLETED', cancel_requested: true, result: outcome });
    this.enqueueReverse(row.transaction_id);
  }

  // ---- the reader's one slot ----

  private pump(): void {
    if (this.stopped || this.recovering || this.busy) return;
    for (let job = this.jobs.shift(); job; job = this.jobs.shift()) {
      const row = this.options.journal.transaction(job.id);
      const { id } = job;
      if (job.kind === 'start' && row?.state === 'QUEUED' && row.request) {
        const request = row.request;
        this.write(row, { state: 'RUNNING' }); // journaled before the reader hears of it
        this.busy = { kind: 'transaction', id };
        this.changed();
        this.armWatch();
        this.call(
          id,
          'start',
          () => this.options.reader.start(request),
          () => this.delivered.add(id),
        );
        return;
      }
      if (job.kind === 'reverse' && row && reverseOwed(row)) {
        this.busy = { kind: 'reverse', id };
        this.changed();
        this.armWatch();
        this.call(id, 'reverse', () => this.options.reader.reverse(id));
        return;
      }
    }
    this.changed();
  }

  private adopt(id: string): void {
    if (!this.busy) this.busy = { kind: 'transaction', id };
    this.changed();
    this.armWatch();
  }

  private release(id: string): void {
    if (this.busy?.id !== id) return;
    this.busy = undefined;
    this.options.timers.clearTimeout(this.watchTimer);
    this.changed();
    this.pump();
  }

  private enqueueReverse(id: string): void {
    const queued = this.jobs.some((job) => job.kind === 'reverse' && job.id === id);
    if (!queued && !(this.busy?.kind === 'reverse' && this.busy.id === id)) {
      this.jobs.push({ kind: 'reverse', id });
    }
    this.pump();
  }

  private finalize(row: TransactionRow, phase: 'COMPLETED' | 'CANCELLED', outcome: Outcome): void {
    this.write(row, { state: phase, result: outcome }, [
      transactionReport(row.transaction_id, phase, outcome),
    ]);
    this.delivered.delete(row.transaction_id);
    this.release(row.transaction_id);
  }

  /** Calls the reader; any failure leaves the decision to the reader's record. */
  private call(id: string, what: string, command: () => Promise<void>, onTaken?: () => void): void {
    let sent: Promise<void>;
    try {
      sent = command();
    } catch (error) {
      sent = Promise.reject(error);
    }
    sent.then(
      () => {
        this.retries.delete(id);
        onTaken?.();
      },
      (error: unknown) => {
        if (this.stopped) return;
        this.options.logger.warn(
          { err: errorInfo(error), transactionId: id, command: what },
          'reader command failed',
        );
        if (what === 'reverse' && this.busy?.kind === 'reverse') this.release(id);
        this.retryLater(id);
      },
    );
  }

  private retryLater(id: string): void {
    this.later(() => void this.reconcile(id), this.backoff(id).next());
  }

  private armWatch(): void {
    const { timers } = this.options;
    timers.clearTimeout(this.watchTimer);
    if (!this.busy || this.stopped) return;
    this.watchTimer = timers.setTimeout(() => {
      const id = this.busy?.id;
      if (id) void this.reconcile(id).then(() => this.armWatch());
    }, this.options.watchMs ?? 15_000);
  }

  // ---- helpers ----

  private write(
    row: TransactionRow,
    changes: Partial<TransactionRow>,
    reports: TerminalReport[] = [],
    entry: { command?: ReturnType<typeof commandRow> } = {},
  ): void {
    this.options.journal.record({
      ...entry,
      transaction: { ...row, ...changes, updated_at: this.options.clock.now().toISOString() },
      reports,
    });
    if (reports.length) this.options.reported();
  }

  private newRow(
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

  private changed(): void {
    const state = this.transactionState;
    if (state === this.lastState) return;
    this.lastState = state;
    this.emit('state', state);
  }

  private backoff(id: string): Backoff {
    let backoff = this.retries.get(id);
    if (!backoff) {
      backoff = new Backoff({ baseMs: 500, capMs: 30_000, ...this.options.retry });
      this.retries.set(id, backoff);
    }
    return backoff;
  }

  private later(callback: () => void, ms: number): void {
    const handle = this.options.timers.setTimeout(() => {
      this.timers.delete(handle);
      callback();
    }, ms);
    this.timers.add(handle);
  }

  private unknown(id: string, event: string): void {
    this.options.logger.warn(
      { transactionId: id, event },
      'reader event for a transaction the agent does not know',
    );
  }
}
