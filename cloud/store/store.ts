/**
 * The relay's store, asynchronous so that SQLite and PostgreSQL fit behind it alike.
 * Every money-state change goes through `changeTransaction`, which runs a synchronous
 * decision against a consistent snapshot and writes its result atomically, together
 * with the commands it sends to the terminal. A resolved promise means committed.
 */
import type { TerminalCommand, TerminalReadings } from '../../protocol/index.js';
import type {
  CredentialRecord,
  EventQuery,
  EventRecord,
  NewEvent,
  PendingCommand,
  WebhookRecord,
  TerminalRecord,
  TransactionRecord,
} from './records.js';

/** The key of a change and what else its decision needs to see. */
export interface ChangeKey {
  terminalId: string;
  externalId: string;
  /** A create also sees the terminal's active transaction and its unconfirmed count. */
  forCreate?: boolean;
  /** A referenced refund also sees its original purchase and the refunds made against it. */
  original?: { terminalId: string; externalId: string };
  /** The change applies an agent's report: applied once, in order, in the same commit. */
  report?: ReportPosition;
}

/** Where a report stands in its agent's outbox (docs/mqtt.md). */
export interface ReportPosition {
  journal: string;
  seq: number;
  /** The report that must be applied before this one (0 or absent: none). */
  prev?: number;
}

/**
 * A report the store did not apply: one applied before (`duplicate`), or one that arrived
 * ahead of an earlier one still missing (`gap`: with several relays sharing the agents'
 * traffic, the earlier one may still be on its way through another).
 */
export class ReportOutOfOrder extends Error {
  constructor(readonly reason: 'duplicate' | 'gap') {
    super(`report ${reason}`);
  }
}

/**
 * Where a report at `position` stands after `last`: within one journal each seq applies
 * once, and only after the report the agent sent before it; a new journal (a wiped
 * agent) starts from nothing.
 */
export function checkReport(
  last: { journal: string | undefined; seq: number },
  position: ReportPosition,
): 'apply' | ReportOutOfOrder['reason'] {
  const applied = last.journal === position.journal ? last.seq : 0;
  if (position.seq <= applied) return 'duplicate';
  return (position.prev ?? 0) <= applied ? 'apply' : 'gap';
}

/** A change committed (or announced) by another relay process sharing the store. */
export type StoreChange =
  | { kind: 'transaction'; terminalId: string; externalId: string; version: number; dueAt?: string }
  /** Events appended; without `events`, readers should simply read again. */
  | { kind: 'events'; events?: Array<Pick<EventRecord, 'accountId' | 'subject' | 'kind'>> }
  | { kind: 'command-acked'; commandId: string }
  | { kind: 'report'; terminalId: string }
  /** Webhooks were created, deleted or re-enabled: the deliverer brings itself in line. */
  | { kind: 'webhooks' }
  /** A simulated terminal was created: the relay that hosts simulators starts it. */
  | { kind: 'simulator'; terminalId: string }
  /** Listening (again) after a gap: changes may have been missed; read again what waits. */
  | { kind: 'resync' };

/**
 * Background work (deadlines, re-sending commands, webhook delivery, retention) runs in
 * one relay process at a time. `onLead` is called when this process takes the lead,
 * `onLose` when it loses it (its database session dropped).
 */
export interface Leadership {
  start(onLead: () => void, onLose: () => void): void;
  stop(): Promise<void>;
}

export interface ChangeContext {
  /** The account the terminal belongs to; undefined when there is no such terminal. */
  terminalOwner: string | undefined;
  current: TransactionRecord | undefined;
  /** A transaction of the same terminal still in PROCESSING or AWAITING_CONTINUE (forCreate). */
  active: TransactionRecord | undefined;
  /** Transactions of the terminal not yet CONFIRMED or COMMITTED (forCreate; else 0). */
  unconfirmedCount: number;
  original?: { record: TransactionRecord | undefined; refunds: TransactionRecord[] };
}

export interface Change<R> {
  /** The record to insert or replace; omitted when nothing changes. */
  write?: TransactionRecord;
  /** Commands for the terminal, queued in the same commit. */
  commands?: TerminalCommand[];
  /** Events describing the change, appended to the log in the same commit. */
  events?: NewEvent[];
  result: R;
}

export type Decide<R> = (context: ChangeContext) => Change<R>;

export interface Store {
  close(): Promise<void>;

  ensureAccount(accountId: string, createdAt: string): Promise<void>;
  putCredential(credential: CredentialRecord): Promise<void>;
  findCredential(username: string): Promise<CredentialRecord | undefined>;

  createTerminal(terminal: TerminalRecord): Promise<void>;
  putAgentCredential(terminalId: string, secretHash: string, createdAt: string): Promise<void>;
  findAgentCredential(terminalId: string): Promise<string | undefined>;
  /** The journal and sequence number of the newest report applied from the terminal's agent. */
  lastReport(terminalId: string): Promise<{ journal: string | undefined; seq: number }>;
  /**
   * Records a report that changes nothing else (its transaction is unknown); throws
   * ReportOutOfOrder as a change carrying the report would.
   */
  recordReport(terminalId: string, position: ReportPosition): Promise<void>;
  getTerminal(terminalId: string): Promise<TerminalRecord | undefined>;
  listTerminals(kind?: TerminalRecord['kind']): Promise<TerminalRecord[]>;
  /**
   * Merges readings into the terminal's status and, when anything changed, appends its
   * TerminalStatus event in the same commit. Answers the event, or undefined. With a
   * report position, records it in the same commit or throws ReportOutOfOrder.
   */
  updateTerminalStatus(
    terminalId: string,
    readings: TerminalReadings,
    at: string,
    eventId: string,
    report?: ReportPosition,
  ): Promise<EventRecord | undefined>;

  getTransaction(terminalId: string, externalId: string): Promise<TransactionRecord | undefined>;
  getTransactionById(id: string): Promise<TransactionRecord | undefined>;
  listUnconfirmed(terminalId: string): Promise<TransactionRecord[]>;
  listRefunds(originalId: string): Promise<TransactionRecord[]>;
  /** Transactions with something due by `until` (grace-period commit, pause time-out), earliest first. */
  listDue(until: string, limit: number): Promise<TransactionRecord[]>;
  /** The earliest deadline of any transaction, if one has any. */
  nextDueAt(): Promise<string | undefined>;
  /** Throws ReportOutOfOrder, deciding nothing, when `key.report` is not next in line. */
  changeTransaction<R>(key: ChangeKey, decide: Decide<R>): Promise<R>;

  /** Queues a command that belongs to no transaction (a print job). */
  queueCommand(terminalId: string, command: TerminalCommand): Promise<void>;
  /** Commands not yet acknowledged by their terminal, oldest first. */
  pendingCommands(): Promise<PendingCommand[]>;
  /**
   * Marks the terminal's command delivered. A command of another terminal is left alone:
   * an agent acknowledges only what was sent to it.
   */
  ackCommand(terminalId: string, commandId: string, at: string): Promise<void>;

  /** Events in log order. */
  readEvents(query: EventQuery): Promise<EventRecord[]>;
  countEvents(query: Omit<EventQuery, 'limit'>): Promise<number>;
  /** The newest position written, and the newest one deleted by retention (0: none). */
  eventBounds(): Promise<{ latest: number; trimmedThrough: number }>;
  /** Deletes events older than `olderThan` and below `keepFrom`; answers the new trimmedThrough. */
  trimEvents(olderThan: string, keepFrom: number): Promise<number>;

  createWebhook(webhook: WebhookRecord): Promise<void>;
  getWebhook(id: string): Promise<WebhookRecord | undefined>;
  listWebhooks(accountId?: string): Promise<WebhookRecord[]>;
  updateWebhook(id: string, patch: Partial<Omit<WebhookRecord, 'id' | 'accountId'>>): Promise<void>;
  deleteWebhook(id: string): Promise<void>;

  getSetting(key: string): Promise<string | undefined>;
  putSetting(key: string, value: string): Promise<void>;
  /** Stores `value` unless the key has one; answers the value kept (relays starting at once agree). */
  claimSetting(key: string, value: string): Promise<string>;

  /** Listens for changes committed by other relay processes (an embedded store has none). */
  watch(listener: (change: StoreChange) => void): () => void;
  /** Tells the other relay processes of a change made outside a transaction's commit. */
  announce(change: StoreChange): Promise<void>;
  /** Decides which relay process runs the background work (an embedded store: this one). */
  leadership(): Leadership;
}
