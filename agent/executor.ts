/**
 * The executor: the relay's commands in, the card reader driven, every state change out as
 * a report through the journal's outbox. Its rules, in the order they are checked:
 *
 * - a command_id seen before is acknowledged again with its first outcome and not applied;
 * - journal first, then acknowledge, then act, invariant 4 (docs/architecture.md): a command's
 *   effect on the journal and its outbox reports are one commit, the cmd-ack follows, the
 *   reader call comes last;
 * - a transaction never runs twice: a start for a transaction the journal knows, in any
 *   state, is acknowledged and does nothing else;
 * - the reader does one thing at a time: starts and reversals queue behind the running
 *   transaction, in arrival order (reader-slot.ts);
 * - when a reader command fails (delivery unknown), the reader's own record decides
 *   (reconciler.ts, recovery.ts), after a back-off, as it does at start and as a watchdog
 *   while a transaction runs.
 *
 * Here: the commands and the reader's events. Every row change goes through
 * journal-writer.ts. docs/agent.md has the table of commands and outcomes.
 */
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { BackoffOptions } from '../common/backoff.js';
import type { Clock, Timers } from '../common/clock.js';
import type { CommandMessage } from '../protocol/mqtt.js';
import type { StartTransactionCommand, TerminalCommand } from '../protocol/terminal-link.js';
import type { TerminalTransactionState } from '../protocol/terminal-status.js';
import type { TransactionRecord } from '../protocol/transaction-rules/decision.js';
import { decideCancel, decideContinue, decideStart } from './command-rules.js';
import { JournalWriter } from './journal-writer.js';
import type { CommandOutcome, Journal } from './journal.js';
import type { PrinterPort, ReaderIdentified, ReaderPort, ReaderResult } from './ports.js';
import { ReaderSlot } from './reader-slot.js';
import { Reconciler } from './reconciler.js';
import { isOpen, reverseOwed } from './recovery.js';
import {
  CANCELLED_BEFORE_START,
  EXPIRED,
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
  retry?: Partial<BackoffOptions>;
  /** The relay asked for an end-of-day (journaled and acknowledged first; end-of-day.ts). */
  onEndOfDay?: () => void;
}

/**
 * Where a command came from: the relay (acknowledged over the link) or, in local mode,
 * the agent's own state machine, whose record of the transaction is written in the
 * command's commit (agent/local/engine.ts).
 */
export interface CommandOrigin {
  ack: (commandId: string, outcome: CommandOutcome) => void;
  local?: TransactionRecord;
}

export class Executor extends EventEmitter<{ state: [TerminalTransactionState] }> {
  private readonly writer: JournalWriter;
  private readonly slot: ReaderSlot;
  private readonly reconciler: Reconciler;
  private printing: Promise<void> = Promise.resolve();
  private relayCommandRule:
    ((message: CommandMessage, origin: CommandOrigin) => boolean) | undefined;
  private readonly readerListeners = {
    customer_identified: (event: ReaderIdentified) => this.onIdentified(event),
    result: (event: ReaderResult) => this.onResult(event),
  };

  constructor(private readonly options: ExecutorOptions) {
    super();
    const { journal, reader, clock, timers, logger, reported } = options;
    this.writer = new JournalWriter({ journal, clock, reported, logger });
    this.slot = new ReaderSlot({
      journal,
      reader,
      writer: this.writer,
      timers,
      logger,
      ...(options.watchMs !== undefined ? { watchMs: options.watchMs } : {}),
      ...(options.retry ? { retry: options.retry } : {}),
      reconcile: (id) => this.reconciler.reconcile(id),
      onState: (state) => this.emit('state', state),
    });
    this.reconciler = new Reconciler({
      journal,
      reader,
      writer: this.writer,
      slot: this.slot,
      logger,
    });
    options.reader.on('customer_identified', this.readerListeners.customer_identified);
    options.reader.on('result', this.readerListeners.result);
  }

  /**
   * Local mode's engine takes the relay's commands it decides (agent/local/engine.ts);
   * it answers false for what it leaves to the executor. One at a time.
   */
  setRelayCommandRule(
    rule: ((message: CommandMessage, origin: CommandOrigin) => boolean) | undefined,
  ) {
    this.relayCommandRule = rule;
  }

  get transactionState(): TerminalTransactionState {
    return this.slot.state;
  }

  /**
   * Applies one command from the relay. Synchronous up to the acknowledgement, so the link
   * calls it before the broker's PUBACK; reader calls run after.
   */
  handle(message: CommandMessage, from?: CommandOrigin): void {
    if (this.slot.stopped) return;
    const origin = from ?? { ack: this.options.ack };
    // A relay's command (no origin given) goes to local mode's rule first.
    if (!from && this.relayCommandRule?.(message, origin)) return;
    const { command } = message;
    const seen = this.options.journal.command(command.command_id);
    if (seen) {
      this.options.logger.info(
        { commandId: command.command_id },
        'command seen before: not applied again',
      );
      origin.ack(command.command_id, seen.outcome);
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
        return this.start(command, origin);
      case 'transaction.continue':
        return this.continue(command, origin);
      case 'transaction.cancel':
        return this.cancel(command, origin);
      case 'transaction.confirm':
      case 'transaction.continue_request':
        // Decided by local mode's engine, which takes it before it reaches here; without
        // local mode nothing decides it, and the relay answers OUTCOME_UNKNOWN.
        this.options.journal.record({ command: commandRow(command, 'ACCEPTED') });
        origin.ack(command.command_id, 'ACCEPTED');
        this.options.logger.warn(
          { commandId: command.command_id },
          'request for local mode while local mode is off: not decided',
        );
        return;
      case 'print':
        return this.print(command, origin);
      case 'terminal.end_of_day':
        this.options.journal.record({ command: commandRow(command, 'ACCEPTED') });
        origin.ack(command.command_id, 'ACCEPTED');
        this.options.onEndOfDay?.();
        return;
    }
  }

  /** The reader for an end-of-day, when no payment runs on it (ReaderSlot.claimEndOfDay). */
  claimEndOfDay(): boolean {
    return this.slot.claimEndOfDay();
  }

  releaseEndOfDay(): void {
    this.slot.releaseEndOfDay();
  }

  /** At start: asks the reader about every open transaction before starting anything new. */
  async recover(): Promise<void> {
    const open = this.options.journal.openTransactions();
    if (open.length === 0) return;
    this.slot.recovering = true;
    this.slot.changed();
    this.options.logger.info(
      { count: open.length },
      'reconciling open transactions with the reader',
    );
    for (const row of open) await this.reconciler.reconcile(row.transaction_id);
    this.slot.recovering = false;
    this.slot.changed();
    this.slot.pump();
  }

  async stop(): Promise<void> {
    this.slot.stop();
    this.options.reader.off('customer_identified', this.readerListeners.customer_identified);
    this.options.reader.off('result', this.readerListeners.result);
    await this.printing;
  }

  // ---- commands ----

  private start(command: StartTransactionCommand, origin: CommandOrigin): void {
    const { journal, clock } = this.options;
    const id = command.transaction_id;
    const local = origin.local ? { local: origin.local } : {};
    const entry = { command: commandRow(command, 'ACCEPTED'), ...local };
    // A relay's start for a pair the agent decided locally (docs/local-mode.md) under
    // another id: the pair is paid or paying already, so it is not run a second time.
    const localPair = origin.local ? undefined : journal.localByExternalId(command.external_id);
    if (localPair && localPair.txn.id !== id) {
      journal.record(entry);
      origin.ack(command.command_id, 'ACCEPTED');
      this.options.logger.warn(
        { transactionId: id, localTransactionId: localPair.txn.id },
        'start for a pair made locally: not run',
      );
      return;
    }
    switch (decideStart(journal.transaction(id), command, clock.now())) {
      case 'known':
        journal.record(entry);
        origin.ack(command.command_id, 'ACCEPTED');
        this.options.logger.info(
          { transactionId: id },
          'start for a known transaction: not run again',
        );
        return;
      case 'expired':
        journal.record({
          command: commandRow(command, 'EXPIRED'),
          ...local,
          transaction: this.writer.newRow(id, 'CANCELLED', {
            request: readerStart(command),
            result: EXPIRED,
          }),
          reports: [transactionReport(id, 'CANCELLED', EXPIRED)],
        });
        origin.ack(command.command_id, 'EXPIRED');
        this.options.logger.warn(
          { transactionId: id, expiresAt: command.expires_at },
          'start refused: expired',
        );
        this.options.reported();
        return;
      case 'run':
        journal.record({
          ...entry,
          transaction: this.writer.newRow(id, 'QUEUED', { request: readerStart(command) }),
        });
        origin.ack(command.command_id, 'ACCEPTED');
        this.slot.enqueueStart(id);
    }
  }

  private continue(
    command: TerminalCommand & { type: 'transaction.continue' },
    origin: CommandOrigin,
  ): void {
    const id = command.transaction_id;
    const row = this.options.journal.transaction(id);
    const entry = {
      command: commandRow(command, 'ACCEPTED'),
      ...(origin.local ? { local: origin.local } : {}),
    };
    if (!row || decideContinue(row) === 'ignore') {
      this.options.journal.record(entry);
      origin.ack(command.command_id, 'ACCEPTED');
      this.options.logger.warn(
        { transactionId: id, state: row?.state },
        'continue ignored: not paused',
      );
      return;
    }
    const amount = command.requested_amount;
    this.writer.write(
      row,
      { state: 'RUNNING', continue_requested: true, continue_amount: amount },
      [],
      entry,
    );
    origin.ack(command.command_id, 'ACCEPTED');
    this.slot.changed();
    this.slot.armWatch();
    this.slot.call(id, 'continue', () => this.options.reader.continue(id, amount));
  }

  private cancel(
    command: TerminalCommand & { type: 'transaction.cancel' },
    origin: CommandOrigin,
  ): void {
    const id = command.transaction_id;
    const { journal, logger } = this.options;
    const row = journal.transaction(id);
    const entry = {
      command: commandRow(command, 'ACCEPTED'),
      ...(origin.local ? { local: origin.local } : {}),
    };
    const ack = () => origin.ack(command.command_id, 'ACCEPTED');
    switch (decideCancel(row)) {
      case 'refuse-later':
        journal.record({
          ...entry,
          transaction: this.writer.newRow(id, 'CANCELLED', {
            cancel_requested: true,
            result: CANCELLED_BEFORE_START,
          }),
        });
        ack();
        logger.info({ transactionId: id }, 'cancel before start: the start will be refused');
        return;
      case 'drop':
        this.writer.write(
          row!,
          { state: 'CANCELLED', cancel_requested: true, result: CANCELLED_BEFORE_START },
          [transactionReport(id, 'CANCELLED', CANCELLED_BEFORE_START)],
          entry,
        );
        ack();
        this.slot.dropStart(id);
        return;
      case 'stop':
        this.writer.write(row!, { cancel_requested: true }, [], entry);
        ack();
        this.slot.call(id, 'cancel', () => this.options.reader.cancel(id));
        return;
      case 'reverse':
        this.writer.write(row!, { cancel_requested: true }, [], entry);
        ack();
        logger.info({ transactionId: id }, 'cancel after success: reversing');
        this.slot.enqueueReverse(id);
        return;
      case 'nothing':
        journal.record(entry);
        ack();
        logger.info(
          { transactionId: id, state: row?.state },
          'cancel of a transaction that will not charge',
        );
    }
  }

  private print(command: TerminalCommand & { type: 'print' }, origin: CommandOrigin): void {
    const png = Buffer.from(command.contents, 'base64');
    this.options.journal.record({ command: commandRow(command, 'ACCEPTED') });
    origin.ack(command.command_id, 'ACCEPTED');
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
    this.slot.answered(id);
    if (row.state === 'RUNNING' && !row.continue_requested) {
      const report = transactionReport(id, 'CUSTOMER_IDENTIFIED', {
        details: { customer_identity: event.customer_identity },
      });
      this.writer.write(row, { state: 'PAUSED' }, row.cancel_requested ? [] : [report]);
      this.slot.changed();
      this.slot.armWatch();
      if (row.cancel_requested) this.slot.call(id, 'cancel', () => this.options.reader.cancel(id));
    } else if (!isOpen(row) && row.cancel_requested) {
      this.options.logger.error(
        { transactionId: id },
        'the reader paused a cancelled transaction: cancelling',
      );
      this.slot.call(id, 'cancel', () => this.options.reader.cancel(id));
    }
  }

  private onResult(event: ReaderResult): void {
    const id = event.transaction_id;
    const row = this.options.journal.transaction(id);
    if (!row) return this.unknown(id, 'result');
    this.slot.answered(id);
    const outcome = outcomeOf(event);
    const success = event.phase === 'COMPLETED' && event.result_code === 'SUCCESS';
    this.options.logger.info(
      { transactionId: id, phase: event.phase, resultCode: event.result_code },
      'reader result',
    );
    if (isOpen(row)) {
      this.slot.finalize(row, event.phase, outcome);
      if (success && row.cancel_requested) this.slot.enqueueReverse(id);
    } else if (reverseOwed(row)) {
      if (event.phase === 'CANCELLED') {
        this.writer.write(row, { state: 'CANCELLED', result: outcome }, [
          transactionReport(id, 'CANCELLED', outcome),
        ]);
        this.slot.release(id);
      } else {
        this.options.logger.error(
          { transactionId: id, resultCode: event.result_code },
          'reversal not done',
        );
        this.slot.release(id);
        this.slot.retryLater(id);
      }
    } else if (row.state === 'CANCELLED' && success) {
      this.reconciler.chargedAfterCancel(row, outcome);
    }
  }

  private unknown(id: string, event: string): void {
    this.options.logger.warn(
      { transactionId: id, event },
      'reader event for a transaction the agent does not know',
    );
  }
}
