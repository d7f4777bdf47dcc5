/**
 * The reader does one thing at a time: starts and reversals queue behind the running
 * transaction, in arrival order; a watchdog asks the reader's record when a running one
 * goes quiet; a reader call that fails is followed, after a back-off per transaction, by
 * asking the reader's record (reconciler.ts decides on it).
 */
import type { Logger } from 'pino';
import { Backoff, type BackoffOptions } from '../common/backoff.js';
import type { Timers } from '../common/clock.js';
import type { TerminalTransactionState } from '../protocol/terminal-status.js';
import type { JournalWriter } from './journal-writer.js';
import type { Journal, TransactionRow } from './journal.js';
import type { ReaderPort } from './ports.js';
import { reverseOwed, type Outcome } from './recovery.js';
import { errorInfo, transactionReport } from './reports.js';

export interface ReaderSlotOptions {
  journal: Journal;
  reader: ReaderPort;
  writer: JournalWriter;
  timers: Timers;
  logger: Logger;
  /** Ask the reader's record this long after the last sign of a running transaction (default 15 s). */
  watchMs?: number;
  /** Back-off between attempts when the reader does not answer (default 500 ms to 30 s). */
  retry?: Partial<BackoffOptions>;
  /** Asks the reader's record about a transaction and acts on it. */
  reconcile: (id: string) => Promise<void>;
  /** The terminal's transaction state changed. */
  onState: (state: TerminalTransactionState) => void;
}

type Job = { kind: 'start' | 'reverse'; id: string };
type Busy = { kind: 'transaction' | 'reverse' | 'end-of-day'; id: string };

export class ReaderSlot {
  /** Open transactions are being reconciled (at start): nothing new runs meanwhile. */
  recovering = false;
  stopped = false;
  private busy: Busy | undefined;
  private readonly jobs: Job[] = [];
  /** Transactions whose start the reader acknowledged in this process's life. */
  private readonly delivered = new Set<string>();
  private readonly retries = new Map<string, Backoff>();
  private readonly timers = new Set<unknown>();
  private watchTimer: unknown;
  private lastState: TerminalTransactionState = 'READY';
  /**
   * An end-of-day waits for the reader: the running payment ends first, but no queued one
   * starts before it (a terminal that asked for one refuses payments until it ran).
   */
  private endOfDayWaiting = false;

  constructor(private readonly options: ReaderSlotOptions) {}

  get state(): TerminalTransactionState {
    if (this.recovering || this.busy?.kind === 'reverse' || this.busy?.kind === 'end-of-day')
      return 'BUSY';
    if (!this.busy) return 'READY';
    const row = this.options.journal.transaction(this.busy.id);
    return row?.state === 'PAUSED' ? 'AWAITING_CONTINUE' : 'PROCESSING';
  }

  /** Tells of the state if it changed. */
  changed(): void {
    const state = this.state;
    if (state === this.lastState) return;
    this.lastState = state;
    this.options.onState(state);
  }

  stop(): void {
    this.stopped = true;
    this.options.timers.clearTimeout(this.watchTimer);
    for (const timer of this.timers) this.options.timers.clearTimeout(timer);
  }

  startDelivered(id: string): boolean {
    return this.delivered.has(id);
  }

  enqueueStart(id: string): void {
    this.jobs.push({ kind: 'start', id });
    this.pump();
  }

  /** A queued start that was cancelled before it ran. */
  dropStart(id: string): void {
    const queued = this.jobs.findIndex((job) => job.kind === 'start' && job.id === id);
    if (queued >= 0) this.jobs.splice(queued, 1);
  }

  enqueueReverse(id: string): void {
    const queued = this.jobs.some((job) => job.kind === 'reverse' && job.id === id);
    if (!queued && !(this.busy?.kind === 'reverse' && this.busy.id === id)) {
      this.jobs.push({ kind: 'reverse', id });
    }
    this.pump();
  }

  /**
   * Takes the reader for an end-of-day when nothing runs on it; false (and the wish kept,
   * so that no queued payment starts first) while something does: try again on a change
   * of state.
   */
  claimEndOfDay(): boolean {
    if (this.stopped) return false;
    if (this.recovering || this.busy) {
      this.endOfDayWaiting = true;
      return false;
    }
    this.endOfDayWaiting = false;
    this.busy = { kind: 'end-of-day', id: '' };
    this.changed();
    return true;
  }

  /** The end-of-day ended (or no longer waits): payments run again. */
  releaseEndOfDay(): void {
    this.endOfDayWaiting = false;
    if (this.busy?.kind === 'end-of-day') this.busy = undefined;
    this.changed();
    this.pump();
  }

  pump(): void {
    if (this.stopped || this.recovering || this.busy || this.endOfDayWaiting) return;
    for (let job = this.jobs.shift(); job; job = this.jobs.shift()) {
      const row = this.options.journal.transaction(job.id);
      const { id } = job;
      if (job.kind === 'start' && row?.state === 'QUEUED' && row.request) {
        const request = row.request;
        this.options.writer.write(row, { state: 'RUNNING' }); // journaled before the reader hears of it
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

  /** A transaction the reader is running that this process did not start (after a crash). */
  adopt(id: string): void {
    if (!this.busy) this.busy = { kind: 'transaction', id };
    this.changed();
    this.armWatch();
  }

  release(id: string): void {
    if (this.busy?.id !== id) return;
    this.busy = undefined;
    this.options.timers.clearTimeout(this.watchTimer);
    this.changed();
    this.pump();
  }

  /** Journals the transaction's end and its report, and frees the reader. */
  finalize(row: TransactionRow, phase: 'COMPLETED' | 'CANCELLED', outcome: Outcome): void {
    this.options.writer.write(row, { state: phase, result: outcome }, [
      transactionReport(row.transaction_id, phase, outcome),
    ]);
    this.delivered.delete(row.transaction_id);
    this.release(row.transaction_id);
  }

  /** Calls the reader; any failure leaves the decision to the reader's record. */
  call(id: string, what: string, command: () => Promise<void>, onTaken?: () => void): void {
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

  /** The reader answered about this transaction: its next failure waits the shortest time. */
  answered(id: string): void {
    this.retries.delete(id);
  }

  retryLater(id: string): void {
    this.later(() => void this.options.reconcile(id), this.backoff(id).next());
  }

  /** Resolves after the transaction's next back-off wait (never, once stopped). */
  backOff(id: string): { delayMs: number; waited: Promise<void> } {
    const delayMs = this.backoff(id).next();
    return { delayMs, waited: new Promise<void>((resolve) => this.later(resolve, delayMs)) };
  }

  armWatch(): void {
    const { timers } = this.options;
    timers.clearTimeout(this.watchTimer);
    if (!this.busy || this.stopped) return;
    this.watchTimer = timers.setTimeout(() => {
      const id = this.busy?.id;
      if (id) void this.options.reconcile(id).then(() => this.armWatch());
    }, this.options.watchMs ?? 15_000);
  }

  private backoff(id: string): Backoff {
    let backoff = this.retries.get(id);
    if (!backoff) {
      backoff = new Backoff({ initialMs: 500, maxMs: 30_000, ...this.options.retry });
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
}
