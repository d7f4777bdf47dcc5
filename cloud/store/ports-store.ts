/**
 * A store made of its ports (ports/): each method is its port's. SqliteStore (sqlite.ts)
 * and PostgresStore (postgres/store.ts) give their implementations of the ports, and
 * what only their store has (opening, closing, draining).
 */
import type {
  FleetConfig,
  FleetSettingName,
  ReaderCapabilities,
  TerminalCommand,
  TerminalReadings,
} from '../../protocol/index.js';
import type { Settlement } from '../../protocol/settlement.js';
import type { ReportPosition } from '../delivery/report-order.js';
import type { Decide } from '../transactions/change.js';
import type {
  AccountRecord,
  ConfigLayerRecord,
  CredentialRecord,
  EventQuery,
  FleetReportRecord,
  NewEvent,
  PairingRecord,
  ReleaseRecord,
  RolloutRecord,
  TerminalRecord,
  TransactionQuery,
  WebhookRecord,
} from './records.js';
import type {
  AccountStore,
  ChangeKey,
  EventStore,
  FleetStore,
  SettingsStore,
  Store,
  TerminalStore,
  TransactionStore,
} from './store.js';

/** One implementation of each port. */
export interface StorePorts {
  accounts: AccountStore;
  settings: SettingsStore;
  terminals: TerminalStore;
  transactions: TransactionStore;
  events: EventStore;
  fleet: FleetStore;
}

export abstract class PortsStore implements Store {
  /** Set by the store's constructor, before any method is called. */
  protected abstract readonly ports: StorePorts;

  abstract close(): Promise<void>;

  createAccount(account: AccountRecord) {
    return this.ports.accounts.createAccount(account);
  }

  getAccount(accountId: string) {
    return this.ports.accounts.getAccount(accountId);
  }

  listAccounts() {
    return this.ports.accounts.listAccounts();
  }

  setAccountDisabled(accountId: string, at: string | undefined) {
    return this.ports.accounts.setAccountDisabled(accountId, at);
  }

  putCredential(credential: CredentialRecord) {
    return this.ports.accounts.putCredential(credential);
  }

  findCredential(username: string) {
    return this.ports.accounts.findCredential(username);
  }

  listCredentials(accountId: string) {
    return this.ports.accounts.listCredentials(accountId);
  }

  deleteCredential(username: string) {
    return this.ports.accounts.deleteCredential(username);
  }

  terminalCredentials(terminalId: string) {
    return this.ports.accounts.terminalCredentials(terminalId);
  }

  putAgentCredential(terminalId: string, secretHash: string, createdAt: string) {
    return this.ports.accounts.putAgentCredential(terminalId, secretHash, createdAt);
  }

  findAgentCredential(terminalId: string) {
    return this.ports.accounts.findAgentCredential(terminalId);
  }

  deleteAgentCredential(terminalId: string) {
    return this.ports.accounts.deleteAgentCredential(terminalId);
  }

  getSetting(key: string) {
    return this.ports.settings.getSetting(key);
  }

  putSetting(key: string, value: string) {
    return this.ports.settings.putSetting(key, value);
  }

  claimSetting(key: string, value: string) {
    return this.ports.settings.claimSetting(key, value);
  }

  createTerminal(terminal: TerminalRecord) {
    return this.ports.terminals.createTerminal(terminal);
  }

  lastReport(terminalId: string) {
    return this.ports.terminals.lastReport(terminalId);
  }

  statusAndLastReport(terminalId: string) {
    return this.ports.terminals.statusAndLastReport(terminalId);
  }

  recordReport(terminalId: string, position: ReportPosition) {
    return this.ports.terminals.recordReport(terminalId, position);
  }

  getTerminal(terminalId: string) {
    return this.ports.terminals.getTerminal(terminalId);
  }

  listTerminals(kind?: TerminalRecord['kind']) {
    return this.ports.terminals.listTerminals(kind);
  }

  updateTerminalStatus(
    terminalId: string,
    readings: TerminalReadings,
    at: string,
    eventId: string,
    report?: ReportPosition,
  ) {
    return this.ports.terminals.updateTerminalStatus(terminalId, readings, at, eventId, report);
  }

  appendSettlement(
    terminalId: string,
    settlement: Settlement,
    eventId: string,
    report?: ReportPosition,
  ) {
    return this.ports.terminals.appendSettlement(terminalId, settlement, eventId, report);
  }

  setReaderCapabilities(terminalId: string, reader: ReaderCapabilities | undefined) {
    return this.ports.terminals.setReaderCapabilities(terminalId, reader);
  }

  getTransaction(terminalId: string, externalId: string) {
    return this.ports.transactions.getTransaction(terminalId, externalId);
  }

  getTransactionById(id: string) {
    return this.ports.transactions.getTransactionById(id);
  }

  listUnconfirmed(terminalId: string) {
    return this.ports.transactions.listUnconfirmed(terminalId);
  }

  listRefunds(originalId: string) {
    return this.ports.transactions.listRefunds(originalId);
  }

  searchTransactions(query: TransactionQuery) {
    return this.ports.transactions.searchTransactions(query);
  }

  listDue(until: string, limit: number) {
    return this.ports.transactions.listDue(until, limit);
  }

  nextDueAt() {
    return this.ports.transactions.nextDueAt();
  }

  changeTransaction<R>(key: ChangeKey, decide: Decide<R>) {
    return this.ports.transactions.changeTransaction(key, decide);
  }

  queueCommand(terminalId: string, command: TerminalCommand) {
    return this.ports.transactions.queueCommand(terminalId, command);
  }

  pendingCommands() {
    return this.ports.transactions.pendingCommands();
  }

  ackCommand(terminalId: string, commandId: string, at: string) {
    return this.ports.transactions.ackCommand(terminalId, commandId, at);
  }

  readEvents(query: EventQuery) {
    return this.ports.events.readEvents(query);
  }

  countEvents(query: Omit<EventQuery, 'limit'>) {
    return this.ports.events.countEvents(query);
  }

  eventBounds() {
    return this.ports.events.eventBounds();
  }

  trimEvents(olderThan: string, keepFrom: number) {
    return this.ports.events.trimEvents(olderThan, keepFrom);
  }

  createWebhook(webhook: WebhookRecord) {
    return this.ports.events.createWebhook(webhook);
  }

  getWebhook(id: string) {
    return this.ports.events.getWebhook(id);
  }

  listWebhooks(accountId?: string) {
    return this.ports.events.listWebhooks(accountId);
  }

  updateWebhook(id: string, patch: Partial<Omit<WebhookRecord, 'id' | 'accountId'>>) {
    return this.ports.events.updateWebhook(id, patch);
  }

  deleteWebhook(id: string) {
    return this.ports.events.deleteWebhook(id);
  }

  createPairing(pairing: PairingRecord) {
    return this.ports.fleet.createPairing(pairing);
  }

  findPairing(secretHash: string) {
    return this.ports.fleet.findPairing(secretHash);
  }

  claimPairing(
    code: string,
    claim: NonNullable<PairingRecord['claim']>,
    terminal: TerminalRecord,
    event: NewEvent,
  ) {
    return this.ports.fleet.claimPairing(code, claim, terminal, event);
  }

  collectPairing(secretHash: string, agentSecretHash: string, at: string) {
    return this.ports.fleet.collectPairing(secretHash, agentSecretHash, at);
  }

  addRelease(release: ReleaseRecord) {
    return this.ports.fleet.addRelease(release);
  }

  findRelease(accountId: string, version: string, arch: string) {
    return this.ports.fleet.findRelease(accountId, version, arch);
  }

  listReleases(accountId: string) {
    return this.ports.fleet.listReleases(accountId);
  }

  adoptReleases(accountId: string) {
    return this.ports.fleet.adoptReleases(accountId);
  }

  putConfigLayer(layer: ConfigLayerRecord) {
    return this.ports.fleet.putConfigLayer(layer);
  }

  getConfigLayer(accountId: string, scope: ConfigLayerRecord['scope'], scopeId: string) {
    return this.ports.fleet.getConfigLayer(accountId, scope, scopeId);
  }

  getRelayFleetConfig() {
    return this.ports.fleet.getRelayFleetConfig();
  }

  putRelayConfigLayer(config: FleetConfig, updatedAt: string) {
    return this.ports.fleet.putRelayConfigLayer(config, updatedAt);
  }

  putMerchantSettings(settings: FleetSettingName[], updatedAt: string) {
    return this.ports.fleet.putMerchantSettings(settings, updatedAt);
  }

  putFleetReport(report: FleetReportRecord) {
    return this.ports.fleet.putFleetReport(report);
  }

  fleetReports(terminalId: string) {
    return this.ports.fleet.fleetReports(terminalId);
  }

  createRollout(rollout: RolloutRecord) {
    return this.ports.fleet.createRollout(rollout);
  }

  getRollout(id: string) {
    return this.ports.fleet.getRollout(id);
  }

  listRollouts(filter: { accountId?: string; state?: RolloutRecord['state'] }) {
    return this.ports.fleet.listRollouts(filter);
  }

  updateRollout(rollout: RolloutRecord, revision: number) {
    return this.ports.fleet.updateRollout(rollout, revision);
  }

  recordRolloutOutcome(
    rolloutId: string,
    terminalId: string,
    outcome: { result: string; reason?: string; at: string },
  ) {
    return this.ports.fleet.recordRolloutOutcome(rolloutId, terminalId, outcome);
  }

  cohortTerminals(accountId: string, cohort: string) {
    return this.ports.fleet.cohortTerminals(accountId, cohort);
  }
}
