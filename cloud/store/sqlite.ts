/**
 * The embedded store: one SQLite file in WAL mode with synchronous=FULL, so a resolved
 * write has reached the disk. Reads run on the relay's thread; writes are queued as data
 * and committed in groups, here at light load and on a writer thread under load
 * (sqlite-writer.ts). A transaction change is decided on what the store holds and
 * checked again inside its commit: if the transaction moved in between (a concurrent
 * change), it is decided again on the new state (sqlite-changes.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import type Database from 'better-sqlite3';
import type { Logger } from 'pino';
import type {
  ReaderCapabilities,
  TerminalCommand,
  TerminalReadings,
} from '../../protocol/index.js';
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
  TerminalRecord,
  TransactionQuery,
  TransactionRecord,
  WebhookRecord,
} from './records.js';
import type { Settlement } from '../../protocol/settlement.js';
import type { ReportPosition } from '../delivery/report-order.js';
import type { ChangeKey, Store } from './store.js';
import type { Decide } from '../transactions/change.js';
import {
  IN_UNCONFIRMED_INDEX,
  TRIMMED_SETTING,
  toCredential,
  toEvent,
  toPairing,
  toTerminal,
  toTransaction,
  type CredentialRow,
  type EventRow,
  type PairingRow,
  type TerminalRow,
  type TransactionRow,
  toRelease,
  type ReleaseRow,
} from './rows.js';
import { SqliteChanges } from './sqlite-changes.js';
import { fleetReads } from './sqlite-fleet.js';
import { refuseNewerSchema } from '../../common/schema-version.js';
import { SQLITE_MIGRATIONS } from './sqlite-migrations.js';
import { rolloutReads } from './sqlite-rollouts.js';
import { SqliteWriter, type WriterThreadUse } from './sqlite-writer.js';
import { SHARED_SQL, openSqliteFile, toLastReport, type LastReportRow } from './sqlite-writes.js';

/** The named parameters of the transaction search; null: any. */
interface SearchParams {
  account: string;
  terminal: string | null;
  external: string | null;
  state: string | null;
  before: string | null;
  limit: number;
}

export class SqliteStore implements Store {
  /** The relay thread's connection: migrations, reads, and the writes of light load. */
  private readonly db: Database.Database;
  private readonly writer: SqliteWriter;
  private readonly statements;
  private readonly changes: SqliteChanges;
  private readonly fleet: ReturnType<typeof fleetReads>;
  private readonly rollouts: ReturnType<typeof rolloutReads>;

  constructor(file: string, options: { writerThread?: WriterThreadUse; logger?: Logger } = {}) {
    // Reads and the writer thread use separate connections: they must reach the same file.
    if (file === ':memory:' || file === '') throw new Error('the SQLite store needs a file');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    this.db = openSqliteFile(file);
    try {
      this.migrate();
    } catch (error) {
      this.db.close();
      throw error;
    }
    this.writer = new SqliteWriter(file, this.db, options);
    this.changes = new SqliteChanges(this.db, this.writer);
    this.fleet = fleetReads(this.db);
    this.rollouts = rolloutReads(this.db);
    const db = this.db;
    this.statements = {
      transactionById: db.prepare<[string], TransactionRow>(
        'SELECT * FROM transactions WHERE id = ?',
      ),
      unconfirmed: db.prepare<[string], TransactionRow>(
        `SELECT * FROM transactions WHERE terminal_id = ? AND ${IN_UNCONFIRMED_INDEX} ORDER BY id`,
      ),
      // Each filter applies when given (NULL: any); newest first by (created_at, id),
      // after the row @before in that order.
      search: db.prepare<[SearchParams], TransactionRow>(
        `SELECT * FROM transactions WHERE account_id = @account
           AND (@terminal IS NULL OR terminal_id = @terminal)
           AND (@external IS NULL OR external_id = @external)
           AND (@state IS NULL OR state = @state)
           AND (@before IS NULL OR (created_at, id) <
                 ((SELECT created_at FROM transactions WHERE id = @before), @before))
         ORDER BY created_at DESC, id DESC LIMIT @limit`,
      ),
      refunds: db.prepare<[string], TransactionRow>(
        'SELECT * FROM transactions WHERE original_id = ? ORDER BY id',
      ),
      due: db.prepare<[string, number], TransactionRow>(
        'SELECT * FROM transactions WHERE due_at IS NOT NULL AND due_at <= ? ORDER BY due_at LIMIT ?',
      ),
      nextDue: db.prepare<[], { due_at: string }>(
        'SELECT due_at FROM transactions WHERE due_at IS NOT NULL ORDER BY due_at LIMIT 1',
      ),
      credential: db.prepare<[string], CredentialRow>(
        'SELECT * FROM credentials WHERE username = ?',
      ),
      pendingCommands: db.prepare<[], { terminal_id: string; body: string }>(
        'SELECT terminal_id, body FROM terminal_commands WHERE acked_at IS NULL ORDER BY seq',
      ),
      terminal: db.prepare<[string], TerminalRow>('SELECT * FROM terminals WHERE id = ?'),
      lastReport: db.prepare<[string], LastReportRow>(SHARED_SQL.lastReport),
      statusAndLastReport: db.prepare<[string], LastReportRow & { status: string }>(
        'SELECT status, last_report_journal AS journal, last_report_seq AS seq FROM terminals WHERE id = ?',
      ),
    };
  }

  private migrate(): void {
    this.db.exec(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)',
    );
    const applied = new Set(
      this.db
        .prepare<[], { version: number }>('SELECT version FROM schema_migrations')
        .all()
        .map((r) => r.version),
    );
    refuseNewerSchema(
      `the relay store ${this.db.name}`,
      Math.max(0, ...applied),
      Math.max(...SQLITE_MIGRATIONS.map((m) => m.version)),
    );
    for (const migration of SQLITE_MIGRATIONS) {
      if (applied.has(migration.version)) continue;
      this.db.transaction(() => {
        this.db.exec(migration.sql);
        this.db
          .prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)')
          .run(migration.version, new Date().toISOString());
      })();
    }
  }

  async close(): Promise<void> {
    await this.writer.close();
    this.db.close();
  }

  ensureAccount(accountId: string, createdAt: string): Promise<void> {
    return this.writer.write({ op: 'ensureAccount', arg: { accountId, createdAt } });
  }

  putCredential(credential: CredentialRecord): Promise<void> {
    return this.writer.write({ op: 'putCredential', arg: credential });
  }

  async findCredential(username: string): Promise<CredentialRecord | undefined> {
    const row = this.statements.credential.get(username);
    return row ? toCredential(row) : undefined;
  }

  async listCredentials(accountId: string): Promise<CredentialRecord[]> {
    return this.db
      .prepare<[string], CredentialRow>(
        'SELECT * FROM credentials WHERE account_id = ? ORDER BY username',
      )
      .all(accountId)
      .map(toCredential);
  }

  deleteCredential(username: string): Promise<boolean> {
    return this.writer.write({ op: 'deleteCredential', arg: username });
  }

  async terminalCredentials(terminalId: string): Promise<TerminalCredentialSet> {
    // One statement: one snapshot of the set and its revision.
    const row = this.db
      .prepare<[string, string], { revision: number; credentials: string }>(
        `SELECT coalesce((SELECT revision FROM terminal_credential_revisions WHERE terminal_id = ?), 0) AS revision,
           (SELECT json_group_array(json_object('username', username, 'secretHash', secret_hash))
              FROM (SELECT username, secret_hash FROM credentials WHERE terminal_id = ? ORDER BY username)) AS credentials`,
      )
      .get(terminalId, terminalId)!;
    return {
      revision: row.revision,
      credentials: JSON.parse(row.credentials) as TerminalCredentialSet['credentials'],
    };
  }

  deleteAgentCredential(terminalId: string): Promise<boolean> {
    return this.writer.write({ op: 'deleteAgentCredential', arg: terminalId });
  }

  createTerminal(terminal: TerminalRecord): Promise<void> {
    return this.writer.write({ op: 'createTerminal', arg: terminal });
  }

  putAgentCredential(terminalId: string, secretHash: string, createdAt: string): Promise<void> {
    return this.writer.write({
      op: 'putAgentCredential',
      arg: { terminalId, secretHash, createdAt },
    });
  }

  async findAgentCredential(terminalId: string): Promise<string | undefined> {
    return this.db
      .prepare<[string], { secret_hash: string }>(
        'SELECT secret_hash FROM agent_credentials WHERE terminal_id = ?',
      )
      .get(terminalId)?.secret_hash;
  }

  async lastReport(terminalId: string): Promise<{ journal: string | undefined; seq: number }> {
    return toLastReport(this.statements.lastReport.get(terminalId));
  }

  async statusAndLastReport(terminalId: string) {
    const row = this.statements.statusAndLastReport.get(terminalId);
    if (!row) return undefined;
    return { status: JSON.parse(row.status) as TerminalReadings, lastReport: toLastReport(row) };
  }

  recordReport(terminalId: string, position: ReportPosition): Promise<void> {
    return this.writer.write({ op: 'recordReport', arg: { terminalId, position } });
  }

  async getTerminal(terminalId: string): Promise<TerminalRecord | undefined> {
    const row = this.statements.terminal.get(terminalId);
    return row ? toTerminal(row) : undefined;
  }

  async listTerminals(kind?: TerminalRecord['kind']): Promise<TerminalRecord[]> {
    const rows = kind
      ? this.db
          .prepare<[string], TerminalRow>('SELECT * FROM terminals WHERE kind = ? ORDER BY id')
          .all(kind)
      : this.db.prepare<[], TerminalRow>('SELECT * FROM terminals ORDER BY id').all();
    return rows.map(toTerminal);
  }

  updateTerminalStatus(
    terminalId: string,
    readings: TerminalReadings,
    at: string,
    eventId: string,
    report?: ReportPosition,
  ): Promise<EventRecord | undefined> {
    return this.writer.write({
      op: 'updateTerminalStatus',
      arg: { terminalId, readings, at, eventId, ...(report ? { report } : {}) },
    });
  }

  appendSettlement(
    terminalId: string,
    settlement: Settlement,
    eventId: string,
    report?: ReportPosition,
  ): Promise<EventRecord | undefined> {
    return this.writer.write({
      op: 'appendSettlement',
      arg: { terminalId, settlement, eventId, ...(report ? { report } : {}) },
    });
  }

  setReaderCapabilities(terminalId: string, reader: ReaderCapabilities | undefined): Promise<void> {
    return this.writer.write({
      op: 'setReaderCapabilities',
      arg: { terminalId, ...(reader ? { reader } : {}) },
    });
  }

  async getTransaction(
    terminalId: string,
    externalId: string,
  ): Promise<TransactionRecord | undefined> {
    return this.changes.transaction(terminalId, externalId);
  }

  async getTransactionById(id: string): Promise<TransactionRecord | undefined> {
    const row = this.statements.transactionById.get(id);
    return row ? toTransaction(row) : undefined;
  }

  async listUnconfirmed(terminalId: string): Promise<TransactionRecord[]> {
    return this.statements.unconfirmed.all(terminalId).map(toTransaction);
  }

  async listRefunds(originalId: string): Promise<TransactionRecord[]> {
    return this.statements.refunds.all(originalId).map(toTransaction);
  }

  async searchTransactions(query: TransactionQuery): Promise<TransactionRecord[]> {
    return this.statements.search
      .all({
        account: query.accountId,
        terminal: query.terminalId ?? null,
        external: query.externalId ?? null,
        state: query.state ?? null,
        before: query.beforeId ?? null,
        limit: query.limit,
      })
      .map(toTransaction);
  }

  async listDue(until: string, limit: number): Promise<TransactionRecord[]> {
    return this.statements.due.all(until, limit).map(toTransaction);
  }

  async nextDueAt(): Promise<string | undefined> {
    return this.statements.nextDue.get()?.due_at;
  }

  /** See sqlite-changes.ts. */
  changeTransaction<R>(key: ChangeKey, decide: Decide<R>): Promise<R> {
    return this.changes.change(key, decide);
  }

  queueCommand(terminalId: string, command: TerminalCommand): Promise<void> {
    return this.writer.write({ op: 'queueCommand', arg: { terminalId, command } });
  }

  async pendingCommands() {
    return this.statements.pendingCommands.all().map((row) => ({
      terminalId: row.terminal_id,
      command: JSON.parse(row.body),
    }));
  }

  ackCommand(terminalId: string, commandId: string, at: string): Promise<void> {
    return this.writer.write({ op: 'ackCommand', arg: { terminalId, commandId, at } });
  }

  async readEvents(query: EventQuery): Promise<EventRecord[]> {
    if (query.kind === null) return [];
    const { sql, params } = eventWhere(query);
    return this.db
      .prepare<unknown[], EventRow>(`SELECT * FROM events WHERE ${sql} ORDER BY position LIMIT ?`)
      .all(...params, query.limit)
      .map(toEvent);
  }

  async countEvents(query: Omit<EventQuery, 'limit'>): Promise<number> {
    if (query.kind === null) return 0;
    const { sql, params } = eventWhere(query);
    return (
      this.db
        .prepare<unknown[], { n: number }>(`SELECT count(*) AS n FROM events WHERE ${sql}`)
        .get(...params)?.n ?? 0
    );
  }

  async eventBounds(): Promise<{ latest: number; trimmedThrough: number }> {
    // sqlite_sequence keeps the highest position ever given, even once it is deleted.
    const latest =
      this.db
        .prepare<[], { seq: number }>("SELECT seq FROM sqlite_sequence WHERE name = 'events'")
        .get()?.seq ?? 0;
    const trimmed = Number((await this.getSetting(TRIMMED_SETTING)) ?? 0);
    return { latest, trimmedThrough: trimmed };
  }

  trimEvents(olderThan: string, keepFrom: number): Promise<number> {
    return this.writer.write({ op: 'trimEvents', arg: { olderThan, keepFrom } });
  }

  createWebhook(webhook: WebhookRecord): Promise<void> {
    return this.writer.write({ op: 'createWebhook', arg: webhook });
  }

  async getWebhook(id: string): Promise<WebhookRecord | undefined> {
    const row = this.db
      .prepare<[string], { body: string }>('SELECT body FROM webhooks WHERE id = ?')
      .get(id);
    return row ? JSON.parse(row.body) : undefined;
  }

  async listWebhooks(accountId?: string): Promise<WebhookRecord[]> {
    const rows = accountId
      ? this.db
          .prepare<[string], { body: string }>(
            'SELECT body FROM webhooks WHERE account_id = ? ORDER BY id',
          )
          .all(accountId)
      : this.db.prepare<[], { body: string }>('SELECT body FROM webhooks ORDER BY id').all();
    return rows.map((row) => JSON.parse(row.body));
  }

  updateWebhook(
    id: string,
    patch: Partial<Omit<WebhookRecord, 'id' | 'accountId'>>,
  ): Promise<void> {
    return this.writer.write({ op: 'updateWebhook', arg: { id, patch } });
  }

  deleteWebhook(id: string): Promise<void> {
    return this.writer.write({ op: 'deleteWebhook', arg: { id } });
  }

  createPairing(pairing: PairingRecord): Promise<boolean> {
    return this.writer.write({ op: 'createPairing', arg: pairing });
  }

  async findPairing(secretHash: string): Promise<PairingRecord | undefined> {
    const row = this.db
      .prepare<[string], PairingRow>('SELECT * FROM pairings WHERE secret_hash = ?')
      .get(secretHash);
    return row ? toPairing(row) : undefined;
  }

  claimPairing(
    code: string,
    claim: NonNullable<PairingRecord['claim']>,
    terminal: TerminalRecord,
    event: NewEvent,
  ): Promise<PairingClaimOutcome> {
    return this.writer.write({ op: 'claimPairing', arg: { code, claim, terminal, event } });
  }

  collectPairing(secretHash: string, agentSecretHash: string, at: string): Promise<boolean> {
    return this.writer.write({ op: 'collectPairing', arg: { secretHash, agentSecretHash, at } });
  }

  addRelease(release: ReleaseRecord): Promise<boolean> {
    return this.writer.write({ op: 'addRelease', arg: release });
  }

  async findRelease(
    accountId: string,
    version: string,
    arch: string,
  ): Promise<ReleaseRecord | undefined> {
    const row = this.db
      .prepare<[string, string, string], ReleaseRow>(
        'SELECT * FROM releases WHERE account_id = ? AND version = ? AND arch = ?',
      )
      .get(accountId, version, arch);
    return row ? toRelease(row) : undefined;
  }

  async listReleases(accountId: string): Promise<ReleaseRecord[]> {
    return this.db
      .prepare<[string], ReleaseRow>(
        'SELECT * FROM releases WHERE account_id = ? ORDER BY published_at DESC, version DESC',
      )
      .all(accountId)
      .map(toRelease);
  }

  putConfigLayer(layer: ConfigLayerRecord): Promise<void> {
    return this.writer.write({ op: 'putConfigLayer', arg: layer });
  }

  async getConfigLayer(
    accountId: string,
    scope: ConfigLayerRecord['scope'],
    scopeId: string,
  ): Promise<ConfigLayerRecord | undefined> {
    return this.fleet.getConfigLayer(accountId, scope, scopeId);
  }

  putFleetReport(report: FleetReportRecord): Promise<void> {
    return this.writer.write({ op: 'putFleetReport', arg: report });
  }

  async fleetReports(terminalId: string): Promise<FleetReportRecord[]> {
    return this.fleet.fleetReports(terminalId);
  }

  createRollout(rollout: RolloutRecord): Promise<void> {
    return this.writer.write({ op: 'createRollout', arg: rollout });
  }

  async getRollout(id: string): Promise<RolloutRecord | undefined> {
    return this.rollouts.getRollout(id);
  }

  async listRollouts(filter: {
    accountId?: string;
    state?: RolloutRecord['state'];
  }): Promise<RolloutRecord[]> {
    return this.rollouts.listRollouts(filter);
  }

  updateRollout(rollout: RolloutRecord, revision: number): Promise<boolean> {
    return this.writer.write({ op: 'updateRollout', arg: { rollout, revision } });
  }

  recordRolloutOutcome(
    rolloutId: string,
    terminalId: string,
    outcome: { result: string; reason?: string; at: string },
  ): Promise<boolean> {
    return this.writer.write({
      op: 'recordRolloutOutcome',
      arg: { rolloutId, terminalId, ...outcome },
    });
  }

  async cohortTerminals(
    accountId: string,
    cohort: string,
  ): Promise<Array<{ id: string; connected: boolean }>> {
    return this.rollouts.cohortTerminals(accountId, cohort);
  }

  async getSetting(key: string): Promise<string | undefined> {
    return this.db
      .prepare<[string], { value: string }>('SELECT value FROM settings WHERE key = ?')
      .get(key)?.value;
  }

  putSetting(key: string, value: string): Promise<void> {
    return this.writer.write({ op: 'putSetting', arg: { key, value } });
  }

  claimSetting(key: string, value: string): Promise<string> {
    return this.writer.write({ op: 'claimSetting', arg: { key, value } });
  }
}

function eventWhere(query: Omit<EventQuery, 'limit'>): { sql: string; params: unknown[] } {
  const clauses = ['account_id = ?', 'position > ?'];
  const params: unknown[] = [query.accountId, query.after];
  if (query.subject !== undefined) {
    clauses.push('subject = ?');
    params.push(query.subject);
  }
  if (query.kind !== undefined && query.kind !== null) {
    clauses.push('kind = ?');
    params.push(query.kind);
  }
  return { sql: clauses.join(' AND '), params };
}
