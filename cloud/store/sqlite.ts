/**
 * The embedded store: one SQLite file in WAL mode with synchronous=FULL, so a resolved
 * write has reached the disk. Writes that arrive in the same turn of the event loop
 * share one commit (group commit): each runs in its own savepoint, so one refused
 * change does not undo its neighbours, and all of them are answered only after the
 * shared commit.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { TerminalCommand, TerminalReadings, TerminalStatus } from '../../protocol/index.js';
import type {
  CredentialRecord,
  EventQuery,
  EventRecord,
  NewEvent,
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
  TRIMMED_SETTING,
  UNCONFIRMED_STATES,
  toEvent,
  toTerminal,
  toTransaction,
  type EventRow,
  type TransactionRow,
  type TerminalRow,
} from './rows.js';
import { SQLITE_MIGRATIONS } from './sqlite-migrations.js';

interface QueuedWrite {
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

export class SqliteStore implements Store {
  private readonly db: Database.Database;
  private queue: QueuedWrite[] = [];
  /** Runs one write in a savepoint of the shared transaction (made once: it is not free). */
  private readonly inSavepoint: (run: () => unknown) => unknown;
  private flushScheduled = false;
  private readonly statements;

  constructor(file: string) {
    if (file !== ':memory:') fs.mkdirSync(path.dirname(file), { recursive: true });
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('synchronous = FULL');
    // Checkpoint the WAL into the database every ~16 MB rather than every 4 MB: fewer,
    // larger copies under a steady stream of commits.
    this.db.pragma('wal_autocheckpoint = 4000');
    this.db.pragma('foreign_keys = ON');
    this.db.pragma('busy_timeout = 5000');
    this.migrate();
    this.inSavepoint = this.db.transaction((run: () => unknown) => run());
    const db = this.db;
    this.statements = {
      transactionByKey: db.prepare<[string, string], TransactionRow>(
        'SELECT * FROM transactions WHERE terminal_id = ? AND external_id = ?',
      ),
      transactionById: db.prepare<[string], TransactionRow>(
        'SELECT * FROM transactions WHERE id = ?',
      ),
      activeOnTerminal: db.prepare<[string, string], TransactionRow>(
        `SELECT * FROM transactions WHERE terminal_id = ? AND state IN ${ACTIVE_STATES} AND external_id <> ? LIMIT 1`,
      ),
      unconfirmedCount: db.prepare<[string], { n: number }>(
        `SELECT count(*) AS n FROM transactions WHERE terminal_id = ? AND state IN ${UNCONFIRMED_STATES}`,
      ),
      unconfirmed: db.prepare<[string], TransactionRow>(
        `SELECT * FROM transactions WHERE terminal_id = ? AND state IN ${UNCONFIRMED_STATES} ORDER BY id`,
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
      upsertTransaction: db.prepare(
        `INSERT INTO transactions (id, terminal_id, external_id, account_id, state, original_id, due_at, version, body)
         VALUES (@id, @terminal_id, @external_id, @account_id, @state, @original_id, @due_at, @version, @body)
         ON CONFLICT (id) DO UPDATE SET state = excluded.state, due_at = excluded.due_at,
           version = excluded.version, body = excluded.body`,
      ),
      insertCommand: db.prepare(
        'INSERT INTO terminal_commands (command_id, terminal_id, body, created_at) VALUES (?, ?, ?, ?)',
      ),
      pendingCommands: db.prepare<[], { terminal_id: string; body: string }>(
        'SELECT terminal_id, body FROM terminal_commands WHERE acked_at IS NULL ORDER BY seq',
      ),
      ackCommand: db.prepare(
        'UPDATE terminal_commands SET acked_at = ? WHERE command_id = ? AND acked_at IS NULL',
      ),
      insertEvent: db.prepare<[string, string, string, string, string, string]>(
        'INSERT INTO events (id, account_id, subject, kind, time, data) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      terminal: db.prepare<[string], TerminalRow>('SELECT * FROM terminals WHERE id = ?'),
      lastReport: db.prepare<[string], { journal: string | null; seq: number }>(
        'SELECT last_report_journal AS journal, last_report_seq AS seq FROM terminals WHERE id = ?',
      ),
      setLastReport: db.prepare<[string, number, string]>(
        'UPDATE terminals SET last_report_journal = ?, last_report_seq = ? WHERE id = ?',
      ),
      updateTerminalStatus: db.prepare('UPDATE terminals SET status = ? WHERE id = ?'),
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

  /** Queues a write for the next shared commit. */
  private write<T>(run: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ run, resolve: resolve as (value: unknown) => void, reject });
      if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.flushScheduled = false;
    const batch = this.queue;
    this.queue = [];
    const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    try {
      this.db
        .transaction(() => {
          for (const item of batch) {
            try {
              // A nested transaction is a savepoint: a failing write rolls back alone.
              outcomes.push({ ok: true, value: this.inSavepoint(item.run) });
            } catch (error) {
              outcomes.push({ ok: false, error });
            }
          }
        })
        .immediate();
    } catch (error) {
      for (const item of batch) item.reject(error);
      return;
    }
    batch.forEach((item, i) => {
      const outcome = outcomes[i]!;
      if (outcome.ok) item.resolve(outcome.value);
      else item.reject(outcome.error);
    });
  }

  async close(): Promise<void> {
    if (this.queue.length > 0) this.flush();
    this.db.close();
  }

  ensureAccount(accountId: string, createdAt: string): Promise<void> {
    return this.write(() => {
      this.db
        .prepare('INSERT INTO accounts (id, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING')
        .run(accountId, createdAt);
    });
  }

  putCredential(c: CredentialRecord): Promise<void> {
    return this.write(() => {
      this.db
        .prepare(
          `INSERT INTO credentials (username, secret_hash, account_id, terminal_id, created_at)
           VALUES (?, ?, ?, ?, ?)
           ON CONFLICT (username) DO UPDATE SET secret_hash = excluded.secret_hash,
             account_id = excluded.account_id, terminal_id = excluded.terminal_id`,
        )
        .run(c.username, c.secretHash, c.accountId, c.terminalId ?? null, c.createdAt);
    });
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

  createTerminal(t: TerminalRecord): Promise<void> {
    return this.write(() => {
      this.db
        .prepare(
          'INSERT INTO terminals (id, account_id, kind, capabilities, status, created_at) VALUES (?, ?, ?, ?, ?, ?)',
        )
        .run(
          t.id,
          t.accountId,
          t.kind,
          JSON.stringify(t.capabilities),
          JSON.stringify(t.status),
          t.createdAt,
        );
    });
  }

  putAgentCredential(terminalId: string, secretHash: string, createdAt: string): Promise<void> {
    return this.write(() => {
      this.db
        .prepare(
          `INSERT INTO agent_credentials (terminal_id, secret_hash, created_at) VALUES (?, ?, ?)
           ON CONFLICT (terminal_id) DO UPDATE SET secret_hash = excluded.secret_hash`,
        )
        .run(terminalId, secretHash, createdAt);
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
    const row = this.statements.lastReport.get(terminalId);
    return { journal: row?.journal ?? undefined, seq: row?.seq ?? 0 };
  }

  recordReport(terminalId: string, position: ReportPosition): Promise<void> {
    return this.write(() => this.takeReport(terminalId, position));
  }

  /** Within a write: records the report as applied, or throws ReportOutOfOrder. */
  private takeReport(terminalId: string, position: ReportPosition): void {
    const row = this.statements.lastReport.get(terminalId);
    const verdict = checkReport(
      { journal: row?.journal ?? undefined, seq: row?.seq ?? 0 },
      position,
    );
    if (verdict !== 'apply') throw new ReportOutOfOrder(verdict);
    this.statements.setLastReport.run(position.journal, position.seq, terminalId);
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
    return this.write(() => {
      if (report) this.takeReport(terminalId, report);
      const row = this.statements.terminal.get(terminalId);
      if (!row) return undefined;
      const current: TerminalStatus = JSON.parse(row.status);
      const changed = Object.entries(readings).some(
        ([key, value]) => current[key as keyof TerminalStatus] !== value,
      );
      if (!changed) return undefined;
      const status: TerminalStatus = { ...current, ...readings, updated_at: at };
      this.statements.updateTerminalStatus.run(JSON.stringify(status), terminalId);
      return this.appendEvent({
        id: eventId,
        accountId: row.account_id,
        subject: terminalId,
        kind: 'TerminalStatus',
        time: at,
        data: status,
      });
    });
  }

  private appendEvent(event: NewEvent): EventRecord {
    const { lastInsertRowid } = this.statements.insertEvent.run(
      event.id,
      event.accountId,
      event.subject,
      event.kind,
      event.time,
      JSON.stringify(event.data),
    );
    return { ...event, position: Number(lastInsertRowid) };
  }

  async getTransaction(
    terminalId: string,
    externalId: string,
  ): Promise<TransactionRecord | undefined> {
    const row = this.statements.transactionByKey.get(terminalId, externalId);
    return row ? toTransaction(row) : undefined;
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

  changeTransaction<R>(key: ChangeKey, decide: Decide<R>): Promise<R> {
    return this.write(() => {
      if (key.report) this.takeReport(key.terminalId, key.report);
      const s = this.statements;
      const current = s.transactionByKey.get(key.terminalId, key.externalId);
      const active = key.forCreate
        ? s.activeOnTerminal.get(key.terminalId, key.externalId)
        : undefined;
      const terminal = s.terminal.get(key.terminalId);
      const context: ChangeContext = {
        terminal: terminal ? toTerminal(terminal) : undefined,
        current: current ? toTransaction(current) : undefined,
        active: active ? toTransaction(active) : undefined,
        unconfirmedCount: key.forCreate ? (s.unconfirmedCount.get(key.terminalId)?.n ?? 0) : 0,
      };
      if (key.original) {
        const original = s.transactionByKey.get(key.original.terminalId, key.original.externalId);
        context.original = {
          record: original ? toTransaction(original) : undefined,
          refunds: original ? s.refunds.all(original.id).map(toTransaction) : [],
        };
      }
      const change = decide(context);
      const now = new Date().toISOString();
      if (change.write) {
        const { txn } = change.write;
        s.upsertTransaction.run({
          id: txn.id,
          terminal_id: txn.terminal_id,
          external_id: txn.external_id,
          account_id: change.write.accountId,
          state: txn.state,
          original_id: change.write.originalId ?? null,
          due_at: change.write.dueAt ?? null,
          version: change.write.version,
          body: JSON.stringify(txn),
        });
      }
      for (const command of change.commands ?? []) {
        s.insertCommand.run(command.command_id, key.terminalId, JSON.stringify(command), now);
      }
      for (const event of change.events ?? []) this.appendEvent(event);
      return change.result;
    });
  }

  queueCommand(terminalId: string, command: TerminalCommand): Promise<void> {
    return this.write(() => {
      this.statements.insertCommand.run(
        command.command_id,
        terminalId,
        JSON.stringify(command),
        new Date().toISOString(),
      );
    });
  }

  async pendingCommands() {
    return this.statements.pendingCommands.all().map((row) => ({
      terminalId: row.terminal_id,
      command: JSON.parse(row.body),
    }));
  }

  ackCommand(commandId: string, at: string): Promise<void> {
    return this.write(() => {
      this.statements.ackCommand.run(at, commandId);
    });
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
    return this.write(() => {
      const last = this.db
        .prepare<[string, number], { position: number | null }>(
          'SELECT max(position) AS position FROM events WHERE time < ? AND position < ?',
        )
        .get(olderThan, keepFrom)?.position;
      const previous = Number(
        this.db
          .prepare<[string], { value: string }>('SELECT value FROM settings WHERE key = ?')
          .get(TRIMMED_SETTING)?.value ?? 0,
      );
      if (last === null || last === undefined || last <= previous) return previous;
      this.db.prepare('DELETE FROM events WHERE position <= ?').run(last);
      this.db
        .prepare(
          'INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
        )
        .run(TRIMMED_SETTING, String(last));
      return last;
    });
  }

  createWebhook(webhook: WebhookRecord): Promise<void> {
    return this.write(() => {
      this.db
        .prepare('INSERT INTO webhooks (id, account_id, body) VALUES (?, ?, ?)')
        .run(webhook.id, webhook.accountId, JSON.stringify(webhook));
    });
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
    return this.write(() => {
      const row = this.db
        .prepare<[string], { body: string }>('SELECT body FROM webhooks WHERE id = ?')
        .get(id);
      if (!row) return;
      const next: Record<string, unknown> = { ...JSON.parse(row.body), ...patch };
      // An explicit undefined clears a member.
      for (const [key, value] of Object.entries(patch)) if (value === undefined) delete next[key];
      this.db.prepare('UPDATE webhooks SET body = ? WHERE id = ?').run(JSON.stringify(next), id);
    });
  }

  deleteWebhook(id: string): Promise<void> {
    return this.write(() => {
      this.db.prepare('DELETE FROM webhooks WHERE id = ?').run(id);
    });
  }

  async getSetting(key: string): Promise<string | undefined> {
    return this.db
      .prepare<[string], { value: string }>('SELECT value FROM settings WHERE key = ?')
      .get(key)?.value;
  }

  putSetting(key: string, value: string): Promise<void> {
    return this.write(() => {
      this.db
        .prepare(
          'INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
        )
        .run(key, value);
    });
  }

  claimSetting(key: string, value: string): Promise<string> {
    return this.write(() => {
      this.db
        .prepare('INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING')
        .run(key, value);
      return this.db
        .prepare<[string], { value: string }>('SELECT value FROM settings WHERE key = ?')
        .get(key)!.value;
    });
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
