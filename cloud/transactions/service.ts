/**
 * The transaction service: runs the state machine's decisions through the store, then
 * does what a commit implies (wake long polls, hand commands to the outbox, arm the
 * timer of whatever fell due), and applies what terminals report. Nothing here precedes
 * the commit it depends on; delivering commands and ordering reports is cloud/delivery/'s.
 */
import type { Logger } from 'pino';
import type {
  ConfirmRequest,
  ContinueRequest,
  TerminalCommand,
  TerminalReport,
  TransactionSearchRequest,
} from '../../protocol/index.js';
import type { Principal } from '../accounts/principal.js';
import { Cancellation } from '../cancellation.js';
import type { Clock, Timers } from '../../common/clock.js';
import type { CommandOutbox } from '../delivery/outbox.js';
import type { ReportPosition } from '../delivery/report-order.js';
import { ApiError } from '../errors.js';
import { pairTransactionId } from '../../protocol/transaction-rules/pair-id.js';
import type { EventFeed } from '../events/event-feed.js';
import { newCommandId, newEventId, newTransactionId } from '../ids.js';
import { longPoll, parkingHolder, type ParkedWaits } from '../long-poll.js';
import type { NewEvent, TransactionRecord } from '../store/records.js';
import type { ChangeNotice } from '../cluster/change-bus.js';
import type { ChangeKey, Store } from '../store/store.js';
import type { Decide } from './change.js';
import { ChangeFeed } from './change-feed.js';
import {
  decideConfirm,
  decideContinue,
  decideCreate,
  decideDue,
  refundableAmount,
  type CreateRequest,
  type DecisionEnv,
  type MachineSettings,
} from '../../protocol/transaction-rules/state-machine.js';
import { AgentDecisions, type AgentDecidedRequest } from './agent-decided.js';
import { DueScheduler } from './due-scheduler.js';
import { ReportIntake } from './report-intake.js';
import { readerRefusal, requiredCapabilities } from './reader-requirements.js';
import { searchTransactions } from './search.js';
import { BoundedMap } from '../../common/bounded-map.js';

export interface TransactionServiceDeps {
  store: Store;
  /** Where committed commands go, to be delivered. */
  outbox: Pick<CommandOutbox<TerminalCommand>, 'send'>;
  clock: Clock;
  settings: MachineSettings;
  logger: Logger;
  events: EventFeed;
  /** What parked long polls time out on (default: the system's). */
  timers?: Timers;
  /** Caps the long polls each credential has parked (default: no cap). */
  parkedWaits?: ParkedWaits;
  /**
   * Whether a terminal's reports may reach other relays too (several relays sharing one
   * broker subscription): then every report's position is committed, since the next one
   * may be checked by a relay that cannot see what this one kept in memory.
   */
  reportsShared?: boolean;
  /**
   * Whether the terminal is in local mode (its desired fleet configuration's
   * `local_api.enabled`): its agent decides its transactions (docs/local-mode.md).
   */
  localMode?: (terminalId: string) => Promise<boolean>;
}

/**
 * Transaction keys kept in memory for reports (see keysById), about 2.5 MB: the seconds
 * a report takes at full load; older ones are read from the store.
 */
const REMEMBERED_KEYS = 10_000;

export class TransactionService {
  readonly feed = new ChangeFeed();
  private readonly store: Store;
  private readonly outbox: TransactionServiceDeps['outbox'];
  private readonly clock: Clock;
  private readonly settings: MachineSettings;
  private readonly logger: Logger;
  private readonly due: DueScheduler;
  private readonly events: EventFeed;
  private readonly timers: Timers | undefined;
  private readonly parkedWaits: ParkedWaits | undefined;
  private readonly localMode: (terminalId: string) => Promise<boolean>;
  /** Confirms and continues of terminals in local mode, decided by their agents. */
  private readonly agentDecisions: AgentDecisions;
  /** Cancelled at shutdown: parked long polls answer the current state at once. */
  private readonly closing = new Cancellation();
  /** What never changes about a terminal: whose it is. */
  private readonly owners = new Map<string, string>();
  /**
   * The terminal and external id of transactions changed lately, by transaction id: a
   * report names only the transaction id, and the change it makes is keyed by the pair.
   */
  private readonly keysById = new BoundedMap<string, { terminalId: string; externalId: string }>(
    REMEMBERED_KEYS,
  );

  private readonly reports: ReportIntake;

  constructor(deps: TransactionServiceDeps) {
    this.store = deps.store;
    this.outbox = deps.outbox;
    this.clock = deps.clock;
    this.settings = deps.settings;
    this.logger = deps.logger;
    this.events = deps.events;
    this.timers = deps.timers;
    this.parkedWaits = deps.parkedWaits;
    this.localMode = deps.localMode ?? (() => Promise.resolve(false));
    this.due = new DueScheduler(deps.store, deps.clock, (record) => this.fallDue(record));
    this.agentDecisions = new AgentDecisions({
      clock: deps.clock,
      ...(deps.timers ? { timers: deps.timers } : {}),
      feed: this.feed,
      closing: this.closing,
      env: () => this.env(),
      read: (terminalId, externalId) => this.store.getTransaction(terminalId, externalId),
      send: (terminalId, externalId, command) =>
        this.change({ terminalId, externalId }, () => ({ commands: [command], result: undefined })),
    });
    this.reports = new ReportIntake({
      store: deps.store,
      events: deps.events,
      logger: deps.logger,
      agentDecisions: this.agentDecisions,
      change: (key, decide) => this.change(key, decide),
      keyOf: (transactionId) => this.keyOf(transactionId),
      env: () => this.env(),
      reportsShared: deps.reportsShared ?? false,
    });
  }

  /** Background work of the leading relay: arms what falls due. */
  lead(): Promise<void> {
    return this.due.start();
  }

  unlead(): void {
    this.due.stop();
  }

  /**
   * Changes of other relays may have been missed: every parked long poll reads again, and
   * the deadlines (when this relay runs them) are looked up again.
   */
  async resync(): Promise<void> {
    await this.due.refresh();
    for (const [terminalId, externalId] of [...this.feed.waitedOn()]) {
      const record = await this.store.getTransaction(terminalId, externalId);
      if (record) this.feed.publish(record);
    }
  }

  /** A change another relay committed: wakes the long polls parked on it here. */
  async applyRemote(change: ChangeNotice): Promise<void> {
    if (change.kind !== 'transaction') return;
    if (change.dueAt) this.due.note(change.dueAt);
    if (!this.feed.has(change.terminalId, change.externalId)) return;
    const record = await this.store.getTransaction(change.terminalId, change.externalId);
    if (record) this.feed.publish(record);
  }

  stop(): void {
    this.closing.cancel();
    this.unlead();
  }

  private env(): DecisionEnv {
    return { now: this.clock.now(), newTransactionId, newCommandId, settings: this.settings };
  }

  /** For a terminal in local mode: a new transaction is named by its pair, as its agent names it. */
  private localEnv(terminalId: string, externalId: string): DecisionEnv {
    return { ...this.env(), newTransactionId: () => pairTransactionId(terminalId, externalId) };
  }

  /** Answers the terminal, or throws `notFound()` when it is outside the principal's reach. */
  async authorizeTerminal(principal: Principal, terminalId: string, notFound: () => ApiError) {
    if (principal.terminalId !== undefined && principal.terminalId !== terminalId) throw notFound();
    const terminal = await this.store.getTerminal(terminalId);
    if (!terminal || terminal.accountId !== principal.accountId) throw notFound();
    return terminal;
  }

  /** The same check where only the owner matters: owners never change, so they are cached. */
  private async checkReach(principal: Principal, terminalId: string, notFound: () => ApiError) {
    if (principal.terminalId !== undefined && principal.terminalId !== terminalId) throw notFound();
    let owner = this.owners.get(terminalId);
    if (owner === undefined) {
      owner = (await this.store.getTerminal(terminalId))?.accountId;
      if (owner === undefined) throw notFound();
      this.owners.set(terminalId, owner);
    }
    if (owner !== principal.accountId) throw notFound();
  }

  /**
   * Refuses a create the terminal's reader cannot carry out. Only a create that needs more
   * than a plain purchase reads the terminal, so the common path costs nothing more.
   */
  private async checkReader(create: CreateRequest): Promise<void> {
    const needs = requiredCapabilities(create);
    if (needs.length === 0) return;
    const terminal = await this.store.getTerminal(create.request.terminal_id);
    const refusal = readerRefusal(needs, terminal?.capabilities.reader);
    if (refusal) throw new ApiError('UNSUPPORTED_BY_TERMINAL', refusal);
  }

  private terminalNotFound(terminalId: string) {
    return () => new ApiError('TERMINAL_NOT_FOUND', `no terminal ${terminalId}`);
  }

  private async change<R>(key: ChangeKey, decide: Decide<R>): Promise<R> {
    let commands: TerminalCommand[] = [];
    let written: TransactionRecord | undefined;
    let event: NewEvent | undefined;
    const result = await this.store.changeTransaction(key, (ctx) => {
      const change = decide(ctx);
      commands = change.commands ?? [];
      written = change.write;
      // Every state change is an event, written in the same commit as the change.
      event =
        written && written.txn.state !== ctx.current?.txn.state
          ? {
              id: newEventId(),
              accountId: written.accountId,
              subject: written.txn.terminal_id,
              kind: 'Transaction',
              time: written.txn.updated_at,
              data: written.txn,
            }
          : undefined;
      return event ? { ...change, events: [event] } : change;
    });
    if (written) {
      this.rememberKey(written);
      this.feed.publish(written);
      if (written.dueAt) this.due.note(written.dueAt);
    }
    if (event) this.events.publish([event]);
    for (const command of commands) this.outbox.send(key.terminalId, command);
    return result;
  }

  /** The least recently changed are forgotten first: reports follow their changes closely. */
  private rememberKey({ txn }: TransactionRecord): void {
    this.keysById.set(txn.id, { terminalId: txn.terminal_id, externalId: txn.external_id });
  }

  /** A transaction's terminal and external id, from memory or else from the store. */
  private async keyOf(transactionId: string) {
    const known = this.keysById.get(transactionId);
    if (known) return known;
    const record = await this.store.getTransactionById(transactionId);
    return record && { terminalId: record.txn.terminal_id, externalId: record.txn.external_id };
  }

  async create(principal: Principal, create: CreateRequest): Promise<TransactionRecord> {
    const { request } = create;
    await this.checkReach(
      principal,
      request.terminal_id,
      this.terminalNotFound(request.terminal_id),
    );
    await this.checkReader(create);
    const original =
      create.kind === 'REFUND' && create.request.original_purchase_external_id !== undefined
        ? {
            terminalId: create.request.original_purchase_terminal_id ?? request.terminal_id,
            externalId: create.request.original_purchase_external_id,
          }
        : undefined;
    if (
      original &&
      principal.terminalId !== undefined &&
      original.terminalId !== principal.terminalId
    ) {
      throw new ApiError(
        'ORIGINAL_PURCHASE_NOT_FOUND',
        `no purchase ${original.externalId} on terminal ${original.terminalId}`,
      );
    }
    const local = await this.localMode(request.terminal_id);
    const decide = decideCreate(
      create,
      principal.accountId,
      local ? this.localEnv(request.terminal_id, request.external_id) : this.env(),
    );
    return this.change(
      {
        terminalId: request.terminal_id,
        externalId: request.external_id,
        forCreate: true,
        ...(original ? { original } : {}),
      },
      local ? handedToAgent(decide) : decide,
    );
  }

  /**
   * A confirm; for a terminal in local mode its agent decides it, and the answer is that
   * decision if it comes back within `waitMs`, else OUTCOME_UNKNOWN (docs/local-mode.md).
   */
  confirm(
    principal: Principal,
    request: ConfirmRequest,
    waitMs = 0,
    gone = new Cancellation(),
  ): Promise<TransactionRecord> {
    return this.decideRequest(
      principal,
      { type: 'transaction.confirm', request },
      decideConfirm(request, principal.accountId, this.env()),
      waitMs,
      gone,
    );
  }

  /** A continue; for a terminal in local mode its agent decides it, as a confirm. */
  continue(
    principal: Principal,
    request: ContinueRequest,
    waitMs = 0,
    gone = new Cancellation(),
  ): Promise<TransactionRecord> {
    return this.decideRequest(
      principal,
      { type: 'transaction.continue_request', request },
      decideContinue(request, principal.accountId, this.env()),
      waitMs,
      gone,
    );
  }

  /** Sends the request to the agent that decides its pair, or decides it here. */
  private async decideRequest(
    principal: Principal,
    asked: AgentDecidedRequest,
    decide: Decide<TransactionRecord>,
    waitMs: number,
    gone: Cancellation,
  ): Promise<TransactionRecord> {
    const { terminal_id: terminalId, external_id: externalId } = asked.request;
    await this.checkReach(principal, terminalId, this.terminalNotFound(terminalId));
    if (await this.decidedByAgent(terminalId, externalId)) {
      return this.agentDecisions.ask(principal, asked, waitMs, gone);
    }
    return this.changeOwn(principal, asked.request, decide);
  }

  /**
   * Whether the terminal's agent decides this pair: a transaction made in local mode, on
   * either path, is named by its pair (pair-id.ts), and stays the agent's when local mode
   * is turned off (the agent's engine runs while it holds such records); one the relay made
   * otherwise stays the relay's when local mode is turned on. A pair not seen goes by
   * whether local mode is in force now.
   */
  private async decidedByAgent(terminalId: string, externalId: string): Promise<boolean> {
    const known = await this.store.getTransaction(terminalId, externalId);
    if (known) return known.txn.id === pairTransactionId(terminalId, externalId);
    return this.localMode(terminalId);
  }

  /** A change of a transaction of a terminal the principal reaches. */
  private async changeOwn(
    principal: Principal,
    request: { terminal_id: string; external_id: string },
    decide: Decide<TransactionRecord>,
  ): Promise<TransactionRecord> {
    await this.checkReach(
      principal,
      request.terminal_id,
      this.terminalNotFound(request.terminal_id),
    );
    return this.change(
      { terminalId: request.terminal_id, externalId: request.external_id },
      (ctx) => {
        // The terminal's agent decides what it made locally; a decision here could be
        // one the terminal contradicts (docs/local-mode.md). Checked before the rules, so
        // that even an unchanged repeat is not answered from the mirror as if decided.
        if (ctx.current?.txn.made_locally) {
          throw new ApiError(
            'INVALID_STATE',
            `transaction ${request.external_id} was made on the terminal in local mode; confirm or continue it through the terminal's local API`,
          );
        }
        return decide(ctx);
      },
    );
  }

  async get(
    principal: Principal,
    terminalId: string,
    externalId: string,
  ): Promise<TransactionRecord> {
    const notFound = () =>
      new ApiError('NOT_FOUND', `no transaction ${externalId} on terminal ${terminalId}`);
    await this.checkReach(principal, terminalId, notFound);
    const record = await this.store.getTransaction(terminalId, externalId);
    if (!record || record.accountId !== principal.accountId) throw notFound();
    return record;
  }

  async refundable(record: TransactionRecord): Promise<number> {
    if (record.txn.type !== 'PURCHASE') return 0;
    return refundableAmount(record, await this.store.listRefunds(record.txn.id));
  }

  /** The transactions the principal reaches that match, newest first (search.ts). */
  search(principal: Principal, request: TransactionSearchRequest) {
    return searchTransactions(this.store, principal, request);
  }

  async unconfirmed(principal: Principal, terminalId: string): Promise<TransactionRecord[]> {
    await this.checkReach(
      principal,
      terminalId,
      () => new ApiError('NOT_FOUND', `no terminal ${terminalId}`),
    );
    return this.store.listUnconfirmed(terminalId);
  }

  /**
   * Refuses (429) a request that would wait when its credential has as many waiting as it
   * may: checked before a create or continue, so that one is not made and then refused.
   */
  checkParking(principal: Principal, waitMs: number): void {
    if (waitMs > 0) this.parkedWaits?.check(parkingHolder(principal));
  }

  /**
   * Waits until the transaction leaves PROCESSING, the time runs out or the caller goes
   * away, and answers the state then. Parks on the change feed: no polling. With its
   * credential's waits all taken, a read (no `initial`) is refused 429; a wait after a
   * create or continue (`initial`) answers the state at once.
   */
  async waitWhileProcessing(
    principal: Principal,
    terminalId: string,
    externalId: string,
    waitMs: number,
    gone: Cancellation,
    initial?: TransactionRecord,
  ): Promise<TransactionRecord> {
    let latest = initial ?? (await this.get(principal, terminalId, externalId));
    if (latest.txn.state !== 'PROCESSING') return latest;
    const parking = {
      waitMs,
      otherwise: () => latest,
      cancelledBy: [gone, this.closing],
      timers: this.timers,
      ...(this.parkedWaits
        ? {
            parkedAs: {
              holder: parkingHolder(principal),
              waits: this.parkedWaits,
              answerWhenFull: initial !== undefined,
            },
          }
        : {}),
    };
    return longPoll(parking, (parked) => {
      const take = (record: TransactionRecord | undefined) => {
        if (!record || record.version <= latest.version) return;
        latest = record;
        if (record.txn.state !== 'PROCESSING') parked.settle(record);
      };
      const unsubscribe = this.feed.subscribe(terminalId, externalId, take);
      // A change may have committed between the first read and the subscription.
      this.store.getTransaction(terminalId, externalId).then(take, (error: unknown) => {
        parked.fail(error);
      });
      return unsubscribe;
    });
  }

  /**
   * Applies what a terminal reports (report-intake.ts). With its position in the agent's
   * outbox, the position is recorded in the same commit as the change, or the store
   * refuses the report with ReportOutOfOrder and nothing changes (the inbox decides).
   */
  applyReport(terminalId: string, report: TerminalReport, position?: ReportPosition) {
    return this.reports.apply(terminalId, report, position);
  }

  private async fallDue(record: TransactionRecord): Promise<void> {
    try {
      await this.change(
        { terminalId: record.txn.terminal_id, externalId: record.txn.external_id },
        decideDue(record.txn.id, this.env()),
      );
    } catch (error) {
      this.logger.error({ err: error, transactionId: record.txn.id }, 'due transition failed');
    }
  }
}

/**
 * A create for a terminal in local mode: its start carries the record as committed, so the
 * agent holds it whole and decides it from then on; nothing falls due on the relay (the
 * agent's timers decide, and a start it never ran is reported by it).
 */
function handedToAgent(decide: Decide<TransactionRecord>): Decide<TransactionRecord> {
  return (ctx) => {
    const decision = decide(ctx);
    const { write } = decision;
    if (!write) return decision;
    const { dueAt: _startTtl, ...kept } = write;
    const commands = decision.commands?.map((command) =>
      command.type === 'transaction.start' ? { ...command, transaction: write.txn } : command,
    );
    return { ...decision, write: kept, result: kept, ...(commands ? { commands } : {}) };
  };
}
