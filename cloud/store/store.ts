/**
 * The relay's store, asynchronous so that SQLite and PostgreSQL fit behind it alike.
 * Every money-state change goes through `changeTransaction`, which runs a synchronous
 * decision against a consistent snapshot and writes its result atomically, together
 * with the commands it sends to the terminal. A resolved promise means committed.
 * Data only: how relays sharing a store hear of each other's changes is the change bus
 * (cluster/change-bus.ts), which of them runs the background work the leadership lock
 * (cluster/leadership-lock.ts); store/open.ts opens the three together.
 */
import type {
  ReaderCapabilities,
  TerminalCommand,
  TerminalReadings,
} from '../../protocol/index.js';
import type { Settlement } from '../../protocol/settlement.js';
import type { ReportPosition } from '../delivery/report-order.js';
import type { Decide } from '../transactions/change.js';
import type {
  ConfigLayerRecord,
  CredentialRecord,
  TerminalCredentialSet,
  FleetReportRecord,
  EventQuery,
  EventRecord,
  NewEvent,
  PairingClaimOutcome,
  PairingRecord,
  ReleaseRecord,
  RolloutRecord,
  PendingCommand,
  WebhookRecord,
  TerminalRecord,
  TransactionQuery,
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

export interface Store {
  close(): Promise<void>;

  ensureAccount(accountId: string, createdAt: string): Promise<void>;
  putCredential(credential: CredentialRecord): Promise<void>;
  findCredential(username: string): Promise<CredentialRecord | undefined>;
  /** The account's credentials, its terminals' included. */
  listCredentials(accountId: string): Promise<CredentialRecord[]>;
  /** Answers whether there was one. */
  deleteCredential(username: string): Promise<boolean>;
  /**
   * A terminal's POS credentials and their revision, read together: the revision grows in
   * the commit of every put or delete of one of them (for local mode's verifiers).
   */
  terminalCredentials(terminalId: string): Promise<TerminalCredentialSet>;

  createTerminal(terminal: TerminalRecord): Promise<void>;
  putAgentCredential(terminalId: string, secretHash: string, createdAt: string): Promise<void>;
  findAgentCredential(terminalId: string): Promise<string | undefined>;
  /** Answers whether there was one. */
  deleteAgentCredential(terminalId: string): Promise<boolean>;
  /** The journal and sequence number of the newest report applied from the terminal's agent. */
  lastReport(terminalId: string): Promise<{ journal: string | undefined; seq: number }>;
  /**
   * The terminal's status and its newest report, in one read: what a heartbeat is checked
   * against on every arrival (cloud/terminals/unchanged-status.ts). Undefined: no such terminal.
   */
  statusAndLastReport(
    terminalId: string,
  ): Promise<
    | { status: TerminalReadings; lastReport: { journal: string | undefined; seq: number } }
    | undefined
  >;
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

  /**
   * Appends the terminal's TerminalSettlement event (an end-of-day it ran) and, with a
   * report position, records it in the same commit or throws ReportOutOfOrder. Answers
   * the event; undefined for an unknown terminal (the report is still recorded).
   */
  appendSettlement(
    terminalId: string,
    settlement: Settlement,
    eventId: string,
    report?: ReportPosition,
  ): Promise<EventRecord | undefined>;

  /**
   * Keeps what the terminal's card reader can do, as its agent says with its presence;
   * undefined forgets it (an agent that does not say: the native reader). Other
   * capabilities are left as they are; an unknown terminal is left alone.
   */
  setReaderCapabilities(terminalId: string, reader: ReaderCapabilities | undefined): Promise<void>;

  getTransaction(terminalId: string, externalId: string): Promise<TransactionRecord | undefined>;
  getTransactionById(id: string): Promise<TransactionRecord | undefined>;
  listUnconfirmed(terminalId: string): Promise<TransactionRecord[]>;
  listRefunds(originalId: string): Promise<TransactionRecord[]>;
  /** An account's transactions matching the query, newest first, at most `limit`. */
  searchTransactions(query: TransactionQuery): Promise<TransactionRecord[]>;
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

  /**
   * Stores a new pairing unless its code is taken (answers false: draw another). Pairings
   * that expired more than a day before it are deleted on the way.
   */
  createPairing(pairing: PairingRecord): Promise<boolean>;
  findPairing(secretHash: string): Promise<PairingRecord | undefined>;
  /**
   * Claims the pairing of `code` at `claim.claimedAt` if it is unclaimed and not expired,
   * and in the same commit creates the terminal and appends the event. Any other outcome
   * changes nothing.
   */
  claimPairing(
    code: string,
    claim: NonNullable<PairingRecord['claim']>,
    terminal: TerminalRecord,
    event: NewEvent,
  ): Promise<PairingClaimOutcome>;
  /**
   * The agent's one collection of a claimed pairing: marks it collected at `at` and stores
   * the terminal's broker credential, in one commit. A pairing unclaimed or collected
   * before (by any process) answers false and changes nothing.
   */
  collectPairing(secretHash: string, agentSecretHash: string, at: string): Promise<boolean>;

  /** Stores a release unless the account has that version for that arch (answers false). */
  addRelease(release: ReleaseRecord): Promise<boolean>;
  findRelease(accountId: string, version: string, arch: string): Promise<ReleaseRecord | undefined>;
  /** The account's releases, newest published first. */
  listReleases(accountId: string): Promise<ReleaseRecord[]>;
  /** Replaces a layer of desired configuration (protocol/fleet-config.ts). */
  putConfigLayer(layer: ConfigLayerRecord): Promise<void>;
  getConfigLayer(
    accountId: string,
    scope: ConfigLayerRecord['scope'],
    scopeId: string,
  ): Promise<ConfigLayerRecord | undefined>;
  /**
   * Keeps what a terminal's agent last said on a fleet topic, replacing what it said
   * before of the same kind; a terminal that does not exist is left alone.
   */
  putFleetReport(report: FleetReportRecord): Promise<void>;
  /** What the terminal's agent last said, one record per kind. */
  fleetReports(terminalId: string): Promise<FleetReportRecord[]>;

  /**
   * Stores a new rollout; in the same commit, the running or paused rollouts of its
   * account's cohort become superseded by it.
   */
  createRollout(rollout: RolloutRecord): Promise<void>;
  getRollout(id: string): Promise<RolloutRecord | undefined>;
  /** Newest first: an account's, or those in one state, or both. */
  listRollouts(filter: {
    accountId?: string;
    state?: RolloutRecord['state'];
  }): Promise<RolloutRecord[]>;
  /**
   * Writes the rollout's state and the terminals it has not written yet, if its revision
   * is still `revision` (else answers false and changes nothing); the revision goes up by one.
   */
  updateRollout(rollout: RolloutRecord, revision: number): Promise<boolean>;
  /** Keeps how a terminal's update ended; false when the rollout never ordered that terminal. */
  recordRolloutOutcome(
    rolloutId: string,
    terminalId: string,
    outcome: { result: string; reason?: string; at: string },
  ): Promise<boolean>;
  /** The terminals of an account's cohort, oldest id first, and whether each is connected. */
  cohortTerminals(
    accountId: string,
    cohort: string,
  ): Promise<Array<{ id: string; connected: boolean }>>;

  getSetting(key: string): Promise<string | undefined>;
  putSetting(key: string, value: string): Promise<void>;
  /** Stores `value` unless the key has one; answers the value kept (relays starting at once agree). */
  claimSetting(key: string, value: string): Promise<string>;
}
