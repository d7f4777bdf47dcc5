/**
 * The SQLite store's transactions and commands (ports/transactions.ts): a change is
 * decided on the relay thread (sqlite-changes.ts) and applied here, in the writer's shared
 * commit (sqlite-writes.ts), once what it was decided on is checked again; the reads run
 * on the relay thread's connection.
 */
import type Database from 'better-sqlite3';
import type { TerminalCommand } from '../../protocol/index.js';
import type { TransactionStore } from './ports/transactions.js';
import type { TransactionQuery, TransactionRecord } from './records.js';
import { ACTIVE_STATES, IN_UNCONFIRMED_INDEX, toTransaction, type TransactionRow } from './rows.js';
import {
  SHARED_SQL,
  WriteConflict,
  refundsSeen,
  toCommandWrite,
  type DecidedChange,
  type DecidedOn,
  type QueuesWrites,
  type WriteSteps,
} from './sqlite-write-steps.js';
import type { ChangeKey } from './store.js';

/** The writes, as operations the writer thread runs. */
export function transactionWrites(db: Database.Database, steps: WriteSteps) {
  const s = {
    versionByKey: db.prepare<[string, string], { id: string; version: number }>(
      'SELECT id, version FROM transactions WHERE terminal_id = ? AND external_id = ?',
    ),
    activeId: db.prepare<[string, string], { id: string }>(
      `SELECT id FROM transactions WHERE terminal_id = ? AND ${IN_UNCONFIRMED_INDEX} AND state IN ${ACTIVE_STATES} AND external_id <> ? LIMIT 1`,
    ),
    unconfirmedCount: db.prepare<[string], { n: number }>(SHARED_SQL.unconfirmedCount),
    refundVersions: db.prepare<[string], { id: string; version: number }>(
      'SELECT id, version FROM transactions WHERE original_id = ? ORDER BY id',
    ),
    upsertTransaction: db.prepare(
      `INSERT INTO transactions (id, terminal_id, external_id, account_id, state, original_id, due_at, version, created_at, body)
       VALUES (@id, @terminal_id, @external_id, @account_id, @state, @original_id, @due_at, @version, @created_at, @body)
       ON CONFLICT (id) DO UPDATE SET state = excluded.state, due_at = excluded.due_at,
         version = excluded.version, created_at = excluded.created_at, body = excluded.body`,
    ),
    ackCommand: db.prepare<[string, string, string]>(
      'UPDATE terminal_commands SET acked_at = ? WHERE command_id = ? AND terminal_id = ? AND acked_at IS NULL',
    ),
  };

  /** Throws WriteConflict when what the decision saw is no longer what the store holds. */
  function checkDecidedOn(key: ChangeKey, seen: DecidedOn): void {
    const moved =
      (s.versionByKey.get(key.terminalId, key.externalId)?.version ?? null) !==
        seen.currentVersion ||
      (key.forCreate &&
        ((s.activeId.get(key.terminalId, key.externalId)?.id ?? null) !== seen.activeId ||
          (s.unconfirmedCount.get(key.terminalId)?.n ?? 0) !== seen.unconfirmedCount)) ||
      (key.original && !sameOriginal(key.original, seen));
    if (moved) throw new WriteConflict();
  }

  function sameOriginal(original: NonNullable<ChangeKey['original']>, seen: DecidedOn): boolean {
    const row = s.versionByKey.get(original.terminalId, original.externalId);
    if ((row?.version ?? null) !== seen.originalVersion) return false;
    return refundsSeen(row ? s.refundVersions.all(row.id) : []) === seen.refunds;
  }

  return {
    applyChange(change: DecidedChange): void {
      const { key } = change;
      const check = () => checkDecidedOn(key, change.decidedOn);
      if (key.report) steps.takeReport(key.terminalId, key.report, check);
      else check();
      const now = new Date().toISOString();
      if (change.write) s.upsertTransaction.run(change.write);
      for (const command of change.commands) steps.insertCommand(key.terminalId, command, now);
      for (const event of change.events) steps.appendEvent(event);
    },

    queueCommand(a: { terminalId: string; command: TerminalCommand }): void {
      steps.insertCommand(a.terminalId, toCommandWrite(a.command), new Date().toISOString());
    },

    ackCommand(a: { terminalId: string; commandId: string; at: string }): void {
      s.ackCommand.run(a.at, a.commandId, a.terminalId);
    },
  };
}

/** The named parameters of the transaction search; null: any. */
interface SearchParams {
  account: string;
  terminal: string | null;
  external: string | null;
  state: string | null;
  before: string | null;
  limit: number;
}

type TransactionWrites = ReturnType<typeof transactionWrites>;

/** The statements the port reads with (the query plans are tested, sqlite.test.ts). */
export function transactionStatements(db: Database.Database) {
  return {
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
    pendingCommands: db.prepare<[], { terminal_id: string; body: string }>(
      'SELECT terminal_id, body FROM terminal_commands WHERE acked_at IS NULL ORDER BY seq',
    ),
  };
}

/** The changes as decided on the relay thread (SqliteChanges, sqlite-changes.ts). */
interface TransactionChanges {
  transaction(terminalId: string, externalId: string): TransactionRecord | undefined;
  change: TransactionStore['changeTransaction'];
}

/** The port, its reads here, its changes decided by `changes`, its writes queued to the writer. */
export function sqliteTransactions(
  db: Database.Database,
  writer: QueuesWrites<TransactionWrites>,
  changes: TransactionChanges,
): TransactionStore {
  const s = transactionStatements(db);
  return {
    async getTransaction(terminalId, externalId) {
      return changes.transaction(terminalId, externalId);
    },

    async getTransactionById(id) {
      const row = s.transactionById.get(id);
      return row ? toTransaction(row) : undefined;
    },

    async listUnconfirmed(terminalId) {
      return s.unconfirmed.all(terminalId).map(toTransaction);
    },

    async listRefunds(originalId) {
      return s.refunds.all(originalId).map(toTransaction);
    },

    async searchTransactions(query: TransactionQuery) {
      return s.search
        .all({
          account: query.accountId,
          terminal: query.terminalId ?? null,
          external: query.externalId ?? null,
          state: query.state ?? null,
          before: query.beforeId ?? null,
          limit: query.limit,
        })
        .map(toTransaction);
    },

    async listDue(until, limit) {
      return s.due.all(until, limit).map(toTransaction);
    },

    async nextDueAt() {
      return s.nextDue.get()?.due_at;
    },

    /** See sqlite-changes.ts. */
    changeTransaction: (key, decide) => changes.change(key, decide),

    queueCommand: (terminalId, command) =>
      writer.write({ op: 'queueCommand', arg: { terminalId, command } }),

    async pendingCommands() {
      return s.pendingCommands.all().map((row) => ({
        terminalId: row.terminal_id,
        command: JSON.parse(row.body),
      }));
    },

    ackCommand: (terminalId, commandId, at) =>
      writer.write({ op: 'ackCommand', arg: { terminalId, commandId, at } }),
  };
}
