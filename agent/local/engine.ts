/**
 * Local mode's engine (docs/local-mode.md): for its own terminal the agent is the arbiter
 * of transactions. It runs the state machine of protocol/transaction-rules/ over its
 * journal, as the relay runs it over its store, and drives the reader through the same
 * executor as a relay's commands: a decision's record and its command are one commit of
 * the journal, before the reader is called (invariant 4, docs/architecture.md).
 *
 * - ids are derived from the pair (pair-id.ts), so the relay names it the same;
 * - the reader's reports move a local record in their own commit (Journal.setReportRule);
 * - the pause time-out and the grace period run here, on the agent's timers.
 */
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { Clock, Timers } from '../../common/clock.js';
import { ApiError } from '../../protocol/api-error.js';
import type { ConfirmRequest, ContinueRequest } from '../../protocol/api.js';
import type {
  AgentDecidedCommand,
  StartTransactionCommand,
  TerminalCommand,
  TransactionReport,
} from '../../protocol/terminal-link.js';
import type {
  ChangeContext,
  Decide,
  Decision,
  TransactionRecord,
} from '../../protocol/transaction-rules/decision.js';
import { pairTransactionId } from '../../protocol/transaction-rules/pair-id.js';
import {
  decideConfirm,
  decideContinue,
  decideCreate,
  decideDue,
  decideReport,
  refundableAmount,
  type CreateRequest,
  type DecisionEnv,
  type MachineSettings,
} from '../../protocol/transaction-rules/state-machine.js';
import type { CommandOrigin } from '../executor.js';
import type { Journal } from '../journal.js';
import { commandRow } from '../reports.js';

/** The owner every local record names: the agent decides for its own terminal alone. */
export const LOCAL_OWNER = 'local';

const RUNNING = ['PROCESSING', 'AWAITING_CONTINUE'] as const;
const UNCONFIRMED = ['PROCESSING', 'AWAITING_CONTINUE', 'AWAITING_CONFIRM'] as const;
const EVERY_STATE = [...UNCONFIRMED, 'CONFIRMED', 'COMMITTED'] as const;

/** The relay's defaults (cloud/config.ts): 10 unconfirmed, a start lives 60 s, a pause 60 s, the grace period 1 h. */
export const DEFAULT_LOCAL_SETTINGS: MachineSettings = {
  maxUnconfirmed: 10,
  startTtlMs: 60_000,
  pauseTimeoutMs: 60_000,
  gracePeriodMs: 3_600_000,
};

export interface LocalEngineOptions {
  terminalId: string;
  journal: Journal;
  /** Applies a command as the relay's would be (Executor.handle). */
  executor: {
    handle(message: { command: TerminalCommand }, origin: CommandOrigin): void;
    /** Where the relay's commands this engine decides are taken (Executor.setRelayCommandRule). */
    setRelayCommandRule?(
      rule: (message: { command: TerminalCommand }, origin: CommandOrigin) => boolean,
    ): void;
  };
  clock: Clock;
  timers: Timers;
  logger: Pick<Logger, 'info' | 'warn'>;
  settings: MachineSettings;
  /** New reports are in the outbox (the link publishes them). */
  reported: () => void;
  /**
   * Asked before a new pair is decided (a repeat of a known one is not asked): throws an
   * ApiError to refuse it, nothing journaled (the bounds while the relay is out of reach).
   */
  admit?: (create: CreateRequest) => void;
}

export class LocalEngine extends EventEmitter<{ changed: [TransactionRecord] }> {
  private readonly due = new Map<string, unknown>();
  private started = false;

  constructor(private readonly options: LocalEngineOptions) {
    super();
    // Long polls wait on this; each parks one listener.
    this.setMaxListeners(0);
  }

  get terminalId(): string {
    return this.options.terminalId;
  }

  /**
   * Takes the reader's reports for local records and arms what falls due. Before the
   * executor's recovery runs, so that an outcome it learns moves the record too.
   */
  start(): void {
    if (this.started) return;
    this.started = true;
    // Kept for the journal's life, past stop(): a reader result that lands while the agent
    // stops must still move its record in its own commit.
    this.options.journal.setReportRule((report) => this.onReport(report));
    this.options.executor.setRelayCommandRule?.((message, origin) =>
      this.takeRelayCommand(message.command, origin),
    );
    this.catchUp();
    for (const record of this.options.journal.localDue()) this.arm(record);
  }

  /** Stops the timers; what falls due meanwhile is decided at the next start. */
  stop(): void {
    this.started = false;
    for (const handle of this.due.values()) this.options.timers.clearTimeout(handle);
    this.due.clear();
  }

  /**
   * A record still running whose reader row is final (a journal an agent wrote while local
   * mode was off) takes the reader's outcome now, as the report would have given it.
   */
  private catchUp(): void {
    const { journal } = this.options;
    for (const record of journal.localInStates(RUNNING)) {
      const row = journal.transaction(record.txn.id);
      if (!row?.result || (row.state !== 'COMPLETED' && row.state !== 'CANCELLED')) continue;
      const moved = this.onReport({
        type: 'transaction',
        transaction_id: row.transaction_id,
        phase: row.state,
        ...row.result,
      });
      if (moved?.record) {
        journal.record({ local: moved.record });
        this.options.reported();
      }
    }
  }

  /**
   * The relay's commands for a transaction of this terminal, decided here (the cloud path
   * of docs/local-mode.md): a start becomes a record of this engine, or reports the record
   * of its pair when there is one; a confirm or continue is decided over the record. False: the
   * executor's to apply (a repeat, which it acknowledges again, or any other command).
   */
  private takeRelayCommand(command: TerminalCommand, origin: CommandOrigin): boolean {
    if (this.options.journal.command(command.command_id)) return false;
    if (command.type === 'transaction.start') return this.takeStart(command, origin);
    if (command.type === 'transaction.confirm' || command.type === 'transaction.continue_request') {
      this.takePosRequest(command, origin);
      return true;
    }
    return false;
  }

  private takeStart(command: StartTransactionCommand, origin: CommandOrigin): boolean {
    const { journal, executor, logger } = this.options;
    const current = journal.localByExternalId(command.external_id);
    if (current) {
      // The pair is decided here already (made locally, or started before): not run a
      // second time; its record is reported, and the relay's record of the start takes it.
      journal.record({ command: commandRow(command, 'ACCEPTED'), local: current });
      origin.ack(command.command_id, 'ACCEPTED');
      logger.info(
        { transactionId: command.transaction_id, localTransactionId: current.txn.id },
        'start for a pair decided here: not run, its record reported',
      );
      this.options.reported();
      return true;
    }
    // A start from a relay that does not know the terminal is in local mode: the executor's.
    if (!command.transaction) return false;
    const { made_locally: _relayMade, ...txn } = command.transaction;
    const record: TransactionRecord = {
      txn,
      accountId: LOCAL_OWNER,
      ...(txn.original_purchase_id ? { originalId: txn.original_purchase_id } : {}),
      version: 1,
    };
    const unconfirmed = journal.localInStates(UNCONFIRMED).length;
    if (unconfirmed >= this.options.settings.maxUnconfirmed) {
      // The limit counts both paths here: a start the relay committed (it answered the POS
      // already) is not run, and ends as a payment that failed before the reader, for the
      // POS to confirm as such, as a start that never reached the reader does.
      const refused = decideReport(
        {
          type: 'transaction',
          transaction_id: txn.id,
          phase: 'CANCELLED',
          result_code: 'TOO_MANY_UNCONFIRMED',
          result_description: `Not run: the terminal holds ${unconfirmed} unconfirmed transactions, its limit`,
        },
        this.env(command.external_id),
      )({ terminalOwner: LOCAL_OWNER, current: record, active: undefined, unconfirmedCount: 0 });
      journal.record({ command: commandRow(command, 'ACCEPTED'), local: refused.write ?? record });
      origin.ack(command.command_id, 'ACCEPTED');
      logger.warn(
        { transactionId: txn.id, unconfirmed },
        'start through the relay not run: too many unconfirmed transactions',
      );
      this.options.reported();
      const stored = journal.localTransaction(txn.id);
      if (stored) this.changed(stored);
      return true;
    }
    executor.handle({ command }, { ack: origin.ack, local: record });
    const stored = journal.localTransaction(txn.id);
    if (stored) this.changed(stored);
    return true;
  }

  /**
   * A POS's confirm or continue through the relay: decided as a local one, and answered by
   * a report of the record naming the command (and the refusal, if refused). After
   * `expires_at` the POS has had its answer (OUTCOME_UNKNOWN) and may have repeated it
   * elsewhere: refused unapplied.
   */
  private takePosRequest(command: AgentDecidedCommand, origin: CommandOrigin): void {
    const { journal, clock, logger } = this.options;
    if (Date.parse(command.expires_at) <= clock.now().getTime()) {
      journal.record({ command: commandRow(command, 'EXPIRED') });
      origin.ack(command.command_id, 'EXPIRED');
      logger.warn(
        { commandId: command.command_id, type: command.type, expiresAt: command.expires_at },
        'request through the relay refused: expired',
      );
      return;
    }
    let error: { code: string; description: string } | undefined;
    let record: TransactionRecord | undefined;
    try {
      record =
        command.type === 'transaction.confirm'
          ? this.confirm(command.request)
          : this.continue(command.request);
    } catch (refused) {
      if (!(refused instanceof ApiError)) throw refused;
      error = { code: refused.code, description: refused.message };
      record = this.get(command.request.terminal_id, command.request.external_id);
    }
    const commandId = command.command_id;
    journal.record({
      command: commandRow(command, 'ACCEPTED'),
      ...(record
        ? { local: record, answers: { command_id: commandId, ...(error ? { error } : {}) } }
        : {}),
      // Refused with no record to report (a pair never seen): the refusal alone.
      ...(!record && error
        ? { reports: [{ type: 'command_refused' as const, command_id: commandId, error }] }
        : {}),
    });
    origin.ack(command.command_id, 'ACCEPTED');
    this.options.reported();
  }

  create(create: CreateRequest): TransactionRecord {
    const { request } = create;
    const context = this.createContext(create);
    if (context.terminalOwner && !context.current) this.options.admit?.(create);
    return this.decide(
      request.external_id,
      decideCreate(create, LOCAL_OWNER, this.env(request.external_id)),
      context,
    );
  }

  confirm(request: ConfirmRequest): TransactionRecord {
    return this.decide(
      request.external_id,
      decideConfirm(request, LOCAL_OWNER, this.env(request.external_id)),
      this.context(request.terminal_id, request.external_id),
    );
  }

  continue(request: ContinueRequest): TransactionRecord {
    return this.decide(
      request.external_id,
      decideContinue(request, LOCAL_OWNER, this.env(request.external_id)),
      this.context(request.terminal_id, request.external_id),
    );
  }

  /** The record of a pair of this terminal; undefined for another terminal's. */
  get(terminalId: string, externalId: string): TransactionRecord | undefined {
    if (terminalId !== this.options.terminalId) return undefined;
    return this.options.journal.localByExternalId(externalId);
  }

  /** What a purchase of this terminal can still give back (refundableAmount). */
  refundable(record: TransactionRecord): number {
    return record.txn.type === 'PURCHASE' ? refundableAmount(record, this.refundsOf(record)) : 0;
  }

  private refundsOf(original: TransactionRecord): TransactionRecord[] {
    return this.options.journal
      .localInStates(EVERY_STATE)
      .filter((r) => r.originalId === original.txn.id);
  }

  /** Transactions not yet CONFIRMED or COMMITTED, by id. */
  unconfirmed(): TransactionRecord[] {
    return this.options.journal.localInStates(UNCONFIRMED);
  }

  private env(externalId: string): DecisionEnv {
    return {
      now: this.options.clock.now(),
      newTransactionId: () => pairTransactionId(this.options.terminalId, externalId),
      newCommandId: () => `cmd-local-${randomUUID()}`,
      settings: this.options.settings,
    };
  }

  private context(terminalId: string, externalId: string): ChangeContext {
    const own = terminalId === this.options.terminalId;
    return {
      terminalOwner: own ? LOCAL_OWNER : undefined,
      current: own ? this.options.journal.localByExternalId(externalId) : undefined,
      active: undefined,
      unconfirmedCount: 0,
    };
  }

  private createContext({ kind, request }: CreateRequest): ChangeContext {
    const { journal } = this.options;
    const context = this.context(request.terminal_id, request.external_id);
    const relayStart = context.current ? undefined : journal.startFor(request.external_id);
    if (context.terminalOwner && relayStart !== undefined) {
      // The relay started this pair on the reader: the agent holds no record of it to
      // answer with, and running it again could charge twice.
      throw new ApiError(
        'INVALID_STATE',
        `transaction ${request.external_id} was started through the relay as ${relayStart}; repeat the request on the relay`,
      );
    }
    context.active = journal.localInStates(RUNNING)[0];
    context.unconfirmedCount = journal.localInStates(UNCONFIRMED).length;
    if (kind === 'REFUND' && request.original_purchase_external_id !== undefined) {
      const terminalId = request.original_purchase_terminal_id ?? request.terminal_id;
      const record =
        terminalId === this.options.terminalId
          ? journal.localByExternalId(request.original_purchase_external_id)
          : undefined;
      context.original = { record, refunds: record ? this.refundsOf(record) : [] };
    }
    return context;
  }

  /** Runs a decision over the journal's snapshot and commits what it decided. */
  private decide(
    externalId: string,
    decide: Decide<TransactionRecord>,
    context: ChangeContext,
  ): TransactionRecord {
    const decision = decide(context);
    const starts = decision.commands?.some((c) => c.type === 'transaction.start') ?? false;
    if (starts && this.readerBusyElsewhere()) {
      throw new ApiError(
        'TERMINAL_BUSY',
        `terminal ${this.options.terminalId} is still processing a transaction started through the relay`,
      );
    }
    return this.commit(externalId, decision);
  }

  /** A record and its command are one commit of the journal; the reader acts after it. */
  private commit(externalId: string, decision: Decision<TransactionRecord>): TransactionRecord {
    const { write } = decision;
    if (!write) return decision.result;
    const [first, ...rest] = decision.commands ?? [];
    const ack = (commandId: string, outcome: string) =>
      this.options.logger.info({ commandId, outcome, externalId }, 'local command journaled');
    if (first) this.options.executor.handle({ command: first }, { ack, local: write });
    else {
      this.options.journal.record({ local: write });
      this.options.reported();
    }
    for (const command of rest) this.options.executor.handle({ command }, { ack });
    // The executor may have moved the record already (a start refused as expired); one it
    // did not write (it is stopping) is answered as not made: no answer before the commit.
    const stored = this.options.journal.localTransaction(write.txn.id);
    if (!stored || stored.version < write.version) {
      throw new ApiError('SERVICE_BUSY', 'the terminal is stopping; repeat the request', {
        'retry-after': '1',
      });
    }
    this.changed(stored);
    return stored;
  }

  /** A transaction the relay started still runs on the reader: no local one starts beside it. */
  private readerBusyElsewhere(): boolean {
    const { journal } = this.options;
    return journal
      .openTransactions()
      .some((row) => journal.localTransaction(row.transaction_id) === undefined);
  }

  /** Inside the report's commit: the record it moves, written with it. */
  private onReport(
    report: TransactionReport,
  ): { record: TransactionRecord | undefined } | undefined {
    const current = this.options.journal.localTransaction(report.transaction_id);
    if (!current) return undefined;
    const { write } = decideReport(
      report,
      this.env(current.txn.external_id),
    )({
      terminalOwner: LOCAL_OWNER,
      current,
      active: undefined,
      unconfirmedCount: 0,
    });
    // Told after the commit: the report's commit is still open here.
    if (write) queueMicrotask(() => this.changed(write));
    return { record: write };
  }

  private changed(record: TransactionRecord): void {
    this.arm(record);
    this.emit('changed', record);
  }

  /** The record's next due time on the agent's timers; a record with none clears its timer. */
  private arm(record: TransactionRecord): void {
    const id = record.txn.id;
    const { timers, clock } = this.options;
    timers.clearTimeout(this.due.get(id));
    this.due.delete(id);
    if (!record.dueAt || !this.started) return;
    const wait = Math.max(0, Date.parse(record.dueAt) - clock.now().getTime());
    this.due.set(
      id,
      timers.setTimeout(() => this.fallDue(id), wait, { unref: true }),
    );
  }

  private fallDue(id: string): void {
    this.due.delete(id);
    const current = this.options.journal.localTransaction(id);
    if (!current) return;
    const decision = decideDue(
      id,
      this.env(current.txn.external_id),
    )({
      terminalOwner: LOCAL_OWNER,
      current,
      active: undefined,
      unconfirmedCount: 0,
    });
    if (!decision.write) {
      if (current.dueAt) this.arm(current);
      return;
    }
    this.options.logger.info(
      { transactionId: id, state: decision.write.txn.state },
      'local transaction fell due',
    );
    this.commit(current.txn.external_id, { ...decision, result: decision.write });
  }
}
