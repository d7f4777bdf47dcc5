/**
 * The embedded store: one SQLite file in WAL mode with synchronous=FULL, so a resolved
 * write has reached the disk. Reads run on the relay's thread; writes are queued as data
 * and committed in groups, here at light load and on a writer thread under load
 * (sqlite-writer.ts). A transaction change is decided here on what the store holds and
 * checked again inside its commit: if the transaction moved in between (a concurrent
 * change), it is decided again on the new state.
 */
import fs from 'node:fs';
import path from 'node:path';
import type Database from 'better-sqlite3';
import type { Logger } from 'pino';
import type { TerminalCommand, TerminalReadings } from '../../protocol/index.js';
import type {
  CredentialRecord,
  EventQuery,
  EventRecord,
  TerminalRecord,
  TransactionRecord,
  WebhookRecord,
} from './records.js';
import {
  ReportOutOfOrder,
  checkReport,
  type ChangeContext,
  type ChangeKey,
  type Decide,
  type Leadership,
  type ReportPosition,
  type Store,
} from './store.js';
import {
  ACTIVE_STATES,
  IN_UNCONFIRMED_INDEX,
  TRIMMED_SETTING,
  toEvent,
  toTerminal,
  toTransaction,
  type EventRow,
  type TerminalRow,
  type TransactionRow,
} from './rows.js';
import { BoundedMap } from '../bounded-map.js';
import { SQLITE_MIGRATIONS } from './sqlite-migrations.js';
import { SqliteWriter, type WriterThreadUse } from './sqlite-writer.js';
import {
  SHARED_SQL,
  WriteConflict,
  openSqliteFile,
  refundsSeen,
  toLastReport,
  type LastReportRow,
  toCommandWrite,
  toEventWrite,
  toTransactionWrite,
  type DecidedOn,
} from './sqlite-writes.js';

/**
 * Decisions taken again after a conflict before giving up. Changes of one terminal are
 * queued in this process, so a conflict needs another process writing the same file.
 */
const MAX_DECISIONS = 50;

/**
 * Transactions kept after this process wrote or read them (a few KB each), so that
 * the steps after a create (the terminal's result, the long poll, the confirm) do not read
 * the file again. Under load each commit of the writer thread, on its own connection,
 * empties the page cache of the relay thread's connection, and a read after it fetches
 * its pages from the file again. A kept transaction is the file's own while this process
 * is the file's only writer (one relay per data directory, data-dir-lock.ts); a change
 * decided on one that another process has since moved still fails its commit check and is
 * decided again on the file's row.
 */
const KEPT_TRANSACTIONS = 2_000;
const transactionKey = (terminalId: string, externalId: string) =>
  `${terminalId}\u0000${externalId}`;

export class SqliteStore implements Store {
  /** The relay thread's connection: migrations, reads, and the writes of light load. */
  private readonly db: Database.Database;
  private readonly writer: SqliteWriter;
  private readonly statements;

  /** Each terminal's account, as changes read it: a terminal never changes hands. */
  private readonly owners = new Map<string, string>();
  /** Transactions by transactionKey, as last written or read here (see KEPT_TRANSACTIONS); frozen. */
  private readonly kept = new BoundedMap<string, TransactionRecord>(KEPT_TRANSACTIONS);
  /** The change last begun on each terminal: changes of one terminal run one after another. */
  private readonly terminalChanges = new Map<string, Promise<unknown>>();
  /** Reads a change's context in one read transaction: a snapshot, whatever commits meanwhile. */
  private readonly readContextSnapshot: (
    key: ChangeKey,
    fromFile: boolean,
  ) => ReturnType<SqliteStore['readContext']>;

  constructor(file: string, options: { writerThread?: WriterThreadUse; logger?: Logger } = {}) {
    // Reads and the writer thread use separate connections: they must reach the same file.
    if (file === ':memory:' || file === '') throw new Error('the SQLite store needs a file');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    this.db = openSqliteFile(file);
    this.migrate();
    this.writer = new SqliteWriter(file, this.db, options);
    this.readContextSnapshot = this.db.transaction((key: ChangeKey, fromFile: boolean) =>
      this.readContext(key, fromFile),
    );
    const db = this.db;
    this.statements = {
      transactionByKey: db.prepare<[string, string], TransactionRow>(
        'SELECT * FROM transactions WHERE terminal_id = ? AND external_id = ?',
      ),
      transactionById: db.prepare<[string], TransactionRow>(
        'SELECT * FROM transactions WHERE id = ?',
      ),
      activeOnTerminal: db.prepare<[string, string], TransactionRow>(
        `SELECT * FROM transactions WHERE terminal_id = ? AND ${IN_UNCONFIRMED_INDEX} AND state IN ${ACTIVE_STATES} AND external_id <> ? LIMIT 1`,
      ),
      unconfirmedCount: db.prepare<[string], { n: number }>(SHARED_SQL.unconfirmedCount),
      unconfirmed: db.prepare<[string], TransactionRow>(
        `SELECT * FROM transactions WHERE terminal_id = ? AND ${IN_UNCONFIRMED_INDEX} ORDER BY id`,
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
      credential: db.prepare<
        [string],
        {
          username: string;
          secret_hash: string;
          account_id: string;
          terminal_id: string | null;
          created_at: string;
        }
      >('SELECT * FROM credentials WHERE username = ?'),
      pendingCommands: db.prepare<[], { terminal_id: string; body: string }>(
        'SELECT terminal_id, body FROM terminal_commands WHERE acked_at IS NULL ORDER BY seq',
      ),
      terminal: db.prepare<[string], TerminalRow>('SELECT * FROM terminals WHERE id = ?'),
      owner: db.prepare<[string], { account_id: string }>(
        'SELECT account_id FROM terminals WHERE id = ?',
      ),
      lastReport: db.prepare<[string], LastReportRow>(SHARED_SQL.lastReport),
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
    if (!row) return undefined;
    return {
      username: row.username,
      secretHash: row.secret_hash,
      accountId: row.account_id,
      ...(row.terminal_id ? { terminalId: row.terminal_id } : {}),
      createdAt: row.created_at,
    };
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

  async getTransaction(
    terminalId: string,
    externalId: string,
  ): Promise<TransactionRecord | undefined> {
    return this.transaction(terminalId, externalId);
  }

  /** A transaction, kept or else read (and kept); `fromFile` reads it in any case. */
  private transaction(
    terminalId: string,
    externalId: string,
    fromFile = false,
  ): TransactionRecord | undefined {
    const key = transactionKey(terminalId, externalId);
    const kept = fromFile ? undefined : this.kept.get(key);
    if (kept) return kept;
    const row = this.statements.transactionByKey.get(terminalId, externalId);
    if (!row) {
      this.kept.delete(key);
      return undefined;
    }
    return this.keep(key, toTransaction(row));
  }

  /**
   * Keeps a transaction unless a later version of it is kept already. It is frozen: the
   * same object answers every later read, so nothing may change it in place.
   */
  private keep(key: string, record: TransactionRecord): TransactionRecord {
    Object.freeze(record.txn);
    Object.freeze(record);
    const kept = this.kept.get(key);
    if (!kept || kept.version <= record.version) this.kept.set(key, record);
    return record;
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

  async listDue(until: string, limit: number): Promise<TransactionRecord[]> {
    return this.statements.due.all(until, limit).map(toTransaction);
  }

  async nextDueAt(): Promise<string | undefined> {
    return this.statements.nextDue.get()?.due_at;
  }

  /**
   * Decides on what the store holds and writes the outcome, checked again in the commit.
   * Changes of one terminal wait for each other, so that they do not decide on the same
   * state; a change that still meets a moved state (another process on the same file) is
   * decided again.
   */
  changeTransaction<R>(key: ChangeKey, decide: Decide<R>): Promise<R> {
    const before = this.terminalChanges.get(key.terminalId);
    const change = before
      ? before.then(
          () => this.decideAndWrite(key, decide),
          () => this.decideAndWrite(key, decide),
        )
      : this.decideAndWrite(key, decide);
    const done = change.then(
      () => undefined,
      () => undefined,
    );
    this.terminalChanges.set(key.terminalId, done);
    void done.then(() => {
      if (this.terminalChanges.get(key.terminalId) === done)
        this.terminalChanges.delete(key.terminalId);
    });
    return change;
  }

  private async decideAndWrite<R>(key: ChangeKey, decide: Decide<R>): Promise<R> {
    const keptAs = transactionKey(key.terminalId, key.externalId);
    for (let decisions = 1; ; decisions++) {
      // After a conflict the kept row may be another process's past: read the file's.
      const fromFile = decisions > 1;
      // One statement reads a consistent state by itself; several share a read transaction.
      const { context, decidedOn, lastReport } =
        key.forCreate || key.original || key.report
          ? this.readContextSnapshot(key, fromFile)
          : this.readContext(key, fromFile);
      // A report applied before (or ahead of its predecessor) is not decided at all; the
      // commit checks its position again.
      if (key.report) {
        const verdict = checkReport(lastReport, key.report);
        if (verdict !== 'apply') throw new ReportOutOfOrder(verdict);
      }
      const change = decide(context);
      const commands = change.commands ?? [];
      const events = change.events ?? [];
      if (!change.write && commands.length === 0 && events.length === 0 && !key.report) {
        return change.result;
      }
      const write = change.write && toTransactionWrite(change.write);
      try {
        await this.writer.write({
          op: 'applyChange',
          arg: {
            key,
            decidedOn,
            ...(write ? { write } : {}),
            commands: commands.map(toCommandWrite),
            // An event of the change carries the transaction as written: its JSON is made once.
            events: events.map((event) =>
              write && event.data === change.write?.txn
                ? { ...event, data: write.body }
                : toEventWrite(event),
            ),
          },
        });
        if (change.write) this.keep(keptAs, change.write);
        return change.result;
      } catch (error) {
        // Whether or not the row was written, the file says what it holds now.
        this.kept.delete(keptAs);
        if (!(error instanceof WriteConflict) || decisions >= MAX_DECISIONS) throw error;
      }
    }
  }

  private ownerOf(terminalId: string): string | undefined {
    let owner = this.owners.get(terminalId);
    if (owner === undefined) {
      owner = this.statements.owner.get(terminalId)?.account_id;
      if (owner !== undefined) this.owners.set(terminalId, owner);
    }
    return owner;
  }

  /** What a change's decision sees, and the same in the terms the writer checks again. */
  private readContext(
    key: ChangeKey,
    fromFile: boolean,
  ): {
    context: ChangeContext;
    decidedOn: DecidedOn;
    lastReport: { journal: string | undefined; seq: number };
  } {
    const s = this.statements;
    const lastReport = toLastReport(key.report ? s.lastReport.get(key.terminalId) : undefined);
    const current = this.transaction(key.terminalId, key.externalId, fromFile);
    const context: ChangeContext = {
      terminalOwner: this.ownerOf(key.terminalId),
      current,
      active: undefined,
      unconfirmedCount: 0,
    };
    const decidedOn: DecidedOn = { currentVersion: current?.version ?? null };
    if (key.forCreate) {
      const active = s.activeOnTerminal.get(key.terminalId, key.externalId);
      context.active = active ? toTransaction(active) : undefined;
      context.unconfirmedCount = s.unconfirmedCount.get(key.terminalId)?.n ?? 0;
      decidedOn.activeId = active?.id ?? null;
      decidedOn.unconfirmedCount = context.unconfirmedCount;
    }
    if (key.original) {
      const original = s.transactionByKey.get(key.original.terminalId, key.original.externalId);
      const refunds = original ? s.refunds.all(original.id).map(toTransaction) : [];
      context.original = { record: original ? toTransaction(original) : undefined, refunds };
      decidedOn.originalVersion = original?.version ?? null;
      decidedOn.refunds = refundsSeen(refunds.map((r) => ({ id: r.txn.id, version: r.version })));
    }
    return { context, decidedOn, lastReport };
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

  /** One process owns the file: no other relay commits to it. */
  watch(): () => void {
    return () => {};
  }

  async announce(): Promise<void> {}

  leadership(): Leadership {
    return { start: (onLead) => onLead(), stop: async () => {} };
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
