/**
 * The agent's journal: one SQLite file (WAL, synchronous=FULL) holding what must survive a
 * crash or a power loss. The agent writes here before it acts and before it acknowledges
 * as invariant 4 (docs/architecture.md) asks; every write (record, recordStatus, prune) is
 * one commit. The one exception is dropping an acknowledged report: it leaves the outbox at
 * once, and its DELETE rides in the next commit, or in `commitDrops` (the link calls it a
 * second after an ack when no commit came). Nothing needs that delete durable sooner: a
 * report that comes back after a crash is published again, and the relay, which applies a
 * report once by seq, drops it and acknowledges it again (docs/mqtt.md).
 *
 * - commands:     every command received, by command_id, so a re-sent command applies once
 * - transactions: what the agent knows of each transaction: its state, whether the relay
 *                 asked to cancel or continue it, and the reader's result
 * - outbox:       reports not yet acknowledged by the relay, numbered by an AUTOINCREMENT
 *                 seq that never goes back, across restarts and deletions; read from its
 *                 copy in memory (agent/outbox-mirror.ts), as the journal is its file's
 *                 only writer
 * - local_transactions: in local mode (docs/local-mode.md), the state machine's record of
 *                 each transaction the agent is the arbiter of, by id and by external_id,
 *                 written in the commit of the command or report that moves it, with
 *                 its report to the relay (the whole record, not the reader's phase)
 */
import { refuseNewerSchema } from '../common/schema-version.js';
import { mkdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import type {
  LocalTransactionReport,
  TerminalReport,
  TransactionReport,
} from '../protocol/terminal-link.js';
import { withoutFullCardNumbers } from '../protocol/transaction.js';
import type { TransactionRecord } from '../protocol/transaction-rules/decision.js';
import { OutboxMirror, type LocalBacklog, type OutboxEntry } from './outbox-mirror.js';
import type { ReaderResult, ReaderStart } from './ports.js';

/**
 * QUEUED: accepted, waiting for the reader. RUNNING: handed to the reader (the start or a
 * continue may or may not have arrived). PAUSED: at customer identification. COMPLETED
 * and CANCELLED are final on the reader.
 */
export type TransactionState = 'QUEUED' | 'RUNNING' | 'PAUSED' | 'COMPLETED' | 'CANCELLED';

export interface TransactionRow {
  transaction_id: string;
  /** The start as the reader gets it; absent when a cancel came before any start. */
  request?: ReaderStart;
  state: TransactionState;
  /** The relay said "must not charge": stop it, or reverse it once it succeeded. */
  cancel_requested: boolean;
  /** A continue was accepted (the reader may not have it yet). */
  continue_requested: boolean;
  continue_amount?: number;
  /** The final outcome (as the reader reported it, or as the agent decided it). */
  result?: Omit<ReaderResult, 'transaction_id' | 'phase'>;
  created_at: string;
  updated_at: string;
}

export type CommandOutcome = 'ACCEPTED' | 'EXPIRED';

/** What a journal's commit outlives before the call returns (see Journal.open). */
export type JournalDurability = 'power-loss' | 'process-crash';

export interface CommandRow {
  command_id: string;
  type: string;
  transaction_id?: string;
  outcome: CommandOutcome;
}

export interface OutboxRow {
  seq: number;
  report: TerminalReport;
}

/** What one commit writes: any of a command, a transaction's new row, reports. */
export interface JournalEntry {
  command?: CommandRow & { body: unknown };
  transaction?: TransactionRow;
  reports?: TerminalReport[];
  /** The state machine's record of a transaction made or decided locally. */
  local?: TransactionRecord;
  /** The relay's command that record's report answers (a confirm decided for the relay). */
  answers?: LocalTransactionReport['answers'];
}

/**
 * Runs inside the commit of every transaction report (agent/local/engine.ts): undefined
 * for a transaction the relay decides; for one the agent decides, the record the report
 * moved, if it moved it. A local record is written in that same commit, so the reader's
 * outcome and the record never disagree after a crash.
 */
export type ReportRule = (
  report: TransactionReport,
) => { record: TransactionRecord | undefined } | undefined;

const SCHEMA_VERSION = 2;

const MIGRATION_1 = `
  CREATE TABLE commands (
    command_id     TEXT PRIMARY KEY,
    type           TEXT NOT NULL,
    transaction_id TEXT,
    outcome        TEXT NOT NULL CHECK (outcome IN ('ACCEPTED', 'EXPIRED')),
    body           TEXT NOT NULL,
    received_at    TEXT NOT NULL
  );
  CREATE TABLE transactions (
    transaction_id     TEXT PRIMARY KEY,
    request            TEXT,
    state              TEXT NOT NULL
                       CHECK (state IN ('QUEUED', 'RUNNING', 'PAUSED', 'COMPLETED', 'CANCELLED')),
    cancel_requested   INTEGER NOT NULL DEFAULT 0,
    continue_requested INTEGER NOT NULL DEFAULT 0,
    continue_amount    INTEGER,
    result_code        TEXT,
    result             TEXT,
    created_at         TEXT NOT NULL,
    updated_at         TEXT NOT NULL
  );
  CREATE INDEX transactions_open ON transactions (created_at)
    WHERE state IN ('QUEUED', 'RUNNING', 'PAUSED')
       OR (state = 'COMPLETED' AND cancel_requested = 1 AND result_code = 'SUCCESS');
  CREATE TABLE outbox (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    type       TEXT NOT NULL CHECK (type IN ('transaction', 'status')),
    body       TEXT NOT NULL,
    created_at TEXT NOT NULL
  );
`;

/** v2: the journal's identity, sent with every report (a wiped journal is a new one). */
const migration2 = () => `
  CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  INSERT INTO meta (key, value) VALUES ('journal_id', '${randomBytes(16).toString('hex')}');
`;

/**
 * The outbox's `type` column says how a row is kept: `status` rows, only the newest;
 * `transaction` rows, each one in order. A settlement (end-of-day.ts) is kept as the
 * latter: every one must reach the relay. It is not a type of its own, so that the
 * schema stays the one an older release opens (an update rolled back keeps its journal).
 */
function outboxKind(report: TerminalReport): 'transaction' | 'status' {
  return report.type === 'status' ? 'status' : 'transaction';
}

/**
 * The records of local mode's state machine (docs/local-mode.md): a table an older release
 * does not read, added without a new schema version, so that an update rolled back still
 * opens its journal.
 */
const LOCAL_TABLE = `
  CREATE TABLE IF NOT EXISTS local_transactions (
    transaction_id TEXT PRIMARY KEY,
    external_id    TEXT NOT NULL UNIQUE,
    state          TEXT NOT NULL,
    record         TEXT NOT NULL,
    due_at         TEXT
  );
  CREATE INDEX IF NOT EXISTS local_transactions_due ON local_transactions (due_at) WHERE due_at IS NOT NULL;
  -- Read at every local create: without them each read scans what the journal holds, and a
  -- backlog made with the link down made every payment slower than the one before.
  CREATE INDEX IF NOT EXISTS local_transactions_state ON local_transactions (state);
  CREATE INDEX IF NOT EXISTS commands_start_external_id
    ON commands (json_extract(body, '$.external_id')) WHERE type = 'transaction.start';
  -- A status report replaces the one before (dropStatuses): found without reading the
  -- reports a backlog holds.
  CREATE INDEX IF NOT EXISTS outbox_statuses ON outbox (type) WHERE type = 'status';
`;

interface TransactionDbRow {
  transaction_id: string;
  request: string | null;
  state: TransactionState;
  cancel_requested: number;
  continue_requested: number;
  continue_amount: number | null;
  result: string | null;
  created_at: string;
  updated_at: string;
}

/** Every statement the journal runs, prepared once: preparing costs more than running. */
function prepareStatements(db: DatabaseSync) {
  return {
    insertCommand: db.prepare(
      `INSERT INTO commands (command_id, type, transaction_id, outcome, body, received_at)
       VALUES (?, ?, ?, ?, ?, ?)`,
    ),
    upsertTransaction: db.prepare(
      `INSERT INTO transactions (transaction_id, request, state, cancel_requested,
         continue_requested, continue_amount, result_code, result, created_at, updated_at)
       VALUES (@transaction_id, @request, @state, @cancel_requested, @continue_requested,
         @continue_amount, @result_code, @result, @created_at, @updated_at)
       ON CONFLICT (transaction_id) DO UPDATE SET
         request = excluded.request, state = excluded.state,
         cancel_requested = excluded.cancel_requested,
         continue_requested = excluded.continue_requested,
         continue_amount = excluded.continue_amount, result_code = excluded.result_code,
         result = excluded.result, updated_at = excluded.updated_at`,
    ),
    insertReport: db.prepare('INSERT INTO outbox (type, body, created_at) VALUES (?, ?, ?)'),
    dropStatuses: db.prepare(`DELETE FROM outbox WHERE type = 'status'`),
    command: db.prepare(
      'SELECT command_id, type, transaction_id, outcome FROM commands WHERE command_id = ?',
    ),
    transaction: db.prepare('SELECT * FROM transactions WHERE transaction_id = ?'),
    openTransactions: db.prepare(
      `SELECT * FROM transactions
        WHERE state IN ('QUEUED', 'RUNNING', 'PAUSED')
           OR (state = 'COMPLETED' AND cancel_requested = 1 AND result_code = 'SUCCESS')
        ORDER BY created_at, rowid`,
    ),
    deleteReport: db.prepare('DELETE FROM outbox WHERE seq = ?'),
    lastSeq: db.prepare(`SELECT seq FROM sqlite_sequence WHERE name = 'outbox'`),
    upsertLocal: db.prepare(
      `INSERT INTO local_transactions (transaction_id, external_id, state, record, due_at)
       VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (transaction_id) DO UPDATE SET
         state = excluded.state, record = excluded.record, due_at = excluded.due_at`,
    ),
    localById: db.prepare('SELECT record FROM local_transactions WHERE transaction_id = ?'),
    localByExternalId: db.prepare('SELECT record FROM local_transactions WHERE external_id = ?'),
    localInStates: db.prepare(
      `SELECT record FROM local_transactions WHERE state IN (SELECT value FROM json_each(?))
        ORDER BY transaction_id`,
    ),
    startFor: db.prepare(
      `SELECT transaction_id FROM commands
        WHERE type = 'transaction.start' AND json_extract(body, '$.external_id') = ?
        LIMIT 1`,
    ),
    anyLocal: db.prepare('SELECT 1 FROM local_transactions LIMIT 1'),
    localDue: db.prepare(
      'SELECT record FROM local_transactions WHERE due_at IS NOT NULL ORDER BY due_at',
    ),
    pruneCommands: db.prepare('DELETE FROM commands WHERE received_at < ?'),
    pruneTransactions: db.prepare(
      `DELETE FROM transactions WHERE updated_at < ?
         AND state IN ('COMPLETED', 'CANCELLED')
         AND NOT (state = 'COMPLETED' AND cancel_requested = 1 AND result_code = 'SUCCESS')`,
    ),
  };
}

export class Journal {
  private readonly statements: ReturnType<typeof prepareStatements>;
  /** This journal's identity: reports carry it so a wiped journal's new seqs still count. */
  readonly id: string;
  private readonly inTransaction: <T>(run: () => T) => T;
  /** The outbox's rows, but for the acknowledged ones: what the outbox reads answer. */
  private readonly outbox: OutboxMirror;
  /** Acknowledged reports, out of `outbox` already, whose DELETE the next commit writes. */
  private readonly owedDrops = new Set<number>();
  private reportRule: ReportRule | undefined;
  private readonly backlogListeners = new Set<(why: 'written' | 'acknowledged') => void>();

  private constructor(
    private readonly db: DatabaseSync,
    private readonly now: () => Date,
  ) {
    this.statements = prepareStatements(db);
    this.id = rowOf<{ value: string }>(
      db.prepare("SELECT value FROM meta WHERE key = 'journal_id'"),
    )!.value;
    this.inTransaction = <T>(run: () => T) => inTransaction(db, run);
    this.outbox = new OutboxMirror(
      rowsOf<OutboxEntry & { created_at: string }>(
        db.prepare('SELECT seq, type, body, created_at FROM outbox ORDER BY seq'),
      ).map(({ seq, type, body, created_at }) => {
        const local =
          type === 'transaction'
            ? localPart(JSON.parse(body) as TerminalReport, created_at)
            : undefined;
        return { seq, type, body, ...(local ? { local } : {}) };
      }),
    );
  }

  /**
   * Opens (creating if needed) `<dataDir>/agent.sqlite`. A terminal's journal survives a
   * power loss (`power-loss`, the default); `process-crash` is for the relay's hosted
   * simulators only (docs/simulator.md): each commit is handed to the operating system,
   * not flushed, so it outlives a crash of the process but maybe not of the machine.
   */
  static open(
    dataDir: string,
    now: () => Date = () => new Date(),
    durability: JournalDurability = 'power-loss',
  ): Journal {
    mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    // Node's own SQLite (node:sqlite), not a native module: a release carries no binary of
    // its own to build per CPU (docs/agent.md, "Packaging a release").
    const db = new DatabaseSync(path.join(dataDir, 'agent.sqlite'), { timeout: 5000 });
    // A simulator's journal is its relay's alone: no file lock taken and released per commit.
    if (durability === 'process-crash') db.exec('PRAGMA locking_mode = EXCLUSIVE');
    db.exec('PRAGMA journal_mode = WAL');
    // FULL: a commit is on disk before the call returns, so an acknowledgement or a reader
    // command that follows it can never be ahead of the journal, even on power loss. OFF
    // (WAL): the commit is in the operating system's hands, which a crashed process is not.
    db.exec(durability === 'power-loss' ? 'PRAGMA synchronous = FULL' : 'PRAGMA synchronous = OFF');
    const version = rowOf<{ user_version: number }>(
      db.prepare('PRAGMA user_version'),
    )!.user_version;
    if (version > SCHEMA_VERSION) {
      db.close();
      refuseNewerSchema(`the journal ${dataDir}/agent.sqlite`, version, SCHEMA_VERSION);
    }
    if (version < SCHEMA_VERSION) {
      inTransaction(db, () => {
        if (version < 1) db.exec(MIGRATION_1);
        if (version < 2) db.exec(migration2());
        db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
      });
    }
    db.exec(LOCAL_TABLE);
    return new Journal(db, now);
  }

  /** Writes a command, a transaction and reports in one commit; returns the reports' seqs. */
  record(entry: JournalEntry): number[] {
    const added = this.commit(() => {
      const at = this.now().toISOString();
      if (entry.command) this.insertCommand(entry.command, at);
      if (entry.transaction) this.upsertTransaction(entry.transaction);
      const reports: TerminalReport[] = [];
      if (entry.local) {
        const report = this.upsertLocal(entry.local);
        reports.push(entry.answers ? { ...report, answers: entry.answers } : report);
      }
      for (const report of entry.reports ?? []) {
        const local = report.type === 'transaction' ? this.reportRule?.(report) : undefined;
        // The relay mirrors a local transaction whole: its phases are not sent, its records are.
        if (!local) reports.push(report);
        else if (local.record) reports.push(this.upsertLocal(local.record));
      }
      return reports.map((report) => this.insertReport(report, at));
    });
    for (const row of added) this.outbox.add(row);
    if (added.some((row) => row.local)) this.backlogChanged('written');
    return added.map((row) => row.seq);
  }

  /**
   * Adds a status report, dropping every older status still in the outbox: only the newest
   * status matters, so a long outage leaves one status behind, not thousands.
   */
  recordStatus(report: TerminalReport & { type: 'status' }): number {
    const added = this.commit(() => {
      this.statements.dropStatuses.run();
      return this.insertReport(report, this.now().toISOString());
    });
    this.outbox.removeStatuses();
    this.outbox.add(added);
    return added.seq;
  }

  command(commandId: string): CommandRow | undefined {
    const row = rowOf<{
      command_id: string;
      type: string;
      transaction_id: string | null;
      outcome: CommandOutcome;
    }>(this.statements.command, commandId);
    if (!row) return undefined;
    const { transaction_id, ...rest } = row;
    return transaction_id === null ? rest : { ...rest, transaction_id };
  }

  transaction(transactionId: string): TransactionRow | undefined {
    const row = rowOf<TransactionDbRow>(this.statements.transaction, transactionId);
    return row && fromDb(row);
  }

  /** Sets the rule a transaction report's commit runs (see ReportRule); one at a time. */
  setReportRule(rule: ReportRule | undefined): void {
    this.reportRule = rule;
  }

  localTransaction(transactionId: string): TransactionRecord | undefined {
    return localOf(rowOf(this.statements.localById, transactionId));
  }

  localByExternalId(externalId: string): TransactionRecord | undefined {
    return localOf(rowOf(this.statements.localByExternalId, externalId));
  }

  /** Local records in any of `states`, by id. */
  localInStates(states: readonly string[]): TransactionRecord[] {
    return this.statements.localInStates
      .all(JSON.stringify(states))
      .map((row) => localOf(row as { record: string })!);
  }

  /** The transaction a start kept in the journal (pruned after its retention) ran the pair as. */
  startFor(externalId: string): string | undefined {
    return rowOf<{ transaction_id: string }>(this.statements.startFor, externalId)?.transaction_id;
  }

  /** Local records with something due, soonest first. */
  localDue(): TransactionRecord[] {
    return this.statements.localDue.all().map((row) => localOf(row as { record: string })!);
  }

  /** Transactions not known to be final (or whose reversal is owed), oldest first. */
  openTransactions(): TransactionRow[] {
    return rowsOf<TransactionDbRow>(this.statements.openTransactions).map(fromDb);
  }

  /** Reports still owed to the relay, in seq order, after `afterSeq`. */
  pendingReports(afterSeq = 0, limit = 1000): OutboxRow[] {
    return this.outbox
      .after(afterSeq, limit)
      .map((row) => ({ seq: row.seq, report: JSON.parse(row.body) as TerminalReport }));
  }

  /** The same rows as stored, each report as its JSON text: the link sends it as it is. */
  pendingReportTexts(afterSeq = 0, limit = 1000): Array<{ seq: number; body: string }> {
    return this.outbox.after(afterSeq, limit);
  }

  /** The newest report still in the outbox before `seq` (0: none). */
  previousReport(seq: number): number {
    return this.outbox.before(seq);
  }

  /**
   * The relay committed this report: it leaves the outbox now, and the file with the next
   * commit (see the top of this file). False when it was not in the outbox.
   */
  dropReport(seq: number): boolean {
    const removed = this.outbox.remove(seq);
    if (!removed) return false;
    this.owedDrops.add(seq);
    if (removed.local) this.backlogChanged('acknowledged');
    return true;
  }

  /** Local transactions whose reports the relay has not acknowledged yet. */
  localBacklog(): LocalBacklog {
    return this.outbox.localBacklog();
  }

  /** Hears each change of `localBacklog()`: a local report written or acknowledged. */
  onLocalBacklog(listener: (why: 'written' | 'acknowledged') => void): () => void {
    this.backlogListeners.add(listener);
    return () => this.backlogListeners.delete(listener);
  }

  /** Whether the journal holds any record of local mode (its engine must run for it). */
  hasLocalRecords(): boolean {
    return rowOf(this.statements.anyLocal) !== undefined;
  }

  private backlogChanged(why: 'written' | 'acknowledged'): void {
    for (const listener of this.backlogListeners) listener(why);
  }

  /** Writes the deletes owed by dropReport in one commit; none owed, nothing to do. */
  commitDrops(): void {
    if (this.owedDrops.size > 0) this.commit(() => undefined);
  }

  /** The last seq ever given (0 before the first report). */
  lastSeq(): number {
    return rowOf<{ seq: number }>(this.statements.lastSeq)?.seq ?? 0;
  }

  /** Forgets final transactions and commands older than `before` (open ones are kept). */
  prune(before: Date): void {
    const cutoff = before.toISOString();
    this.commit(() => {
      this.statements.pruneCommands.run(cutoff);
      this.statements.pruneTransactions.run(cutoff);
    });
  }

  /** Closes the file, once the deletes still owed are committed. */
  close(): void {
    if (!this.db.isOpen) return;
    try {
      this.commitDrops();
    } finally {
      this.db.close();
    }
  }

  /**
   * Runs `write` in one commit that first writes the deletes owed; they are no longer owed
   * once it succeeded. A failed commit leaves them owed (and the outbox's copy as it was).
   */
  private commit<T>(write: () => T): T {
    const result = this.inTransaction(() => {
      for (const seq of this.owedDrops) this.statements.deleteReport.run(seq);
      return write();
    });
    this.owedDrops.clear();
    return result;
  }

  private insertCommand(command: CommandRow & { body: unknown }, at: string): void {
    this.statements.insertCommand.run(
      command.command_id,
      command.type,
      command.transaction_id ?? null,
      command.outcome,
      JSON.stringify(command.body),
      at,
    );
  }

  private upsertTransaction(row: TransactionRow): void {
    this.statements.upsertTransaction.run({
      transaction_id: row.transaction_id,
      request: row.request ? JSON.stringify(row.request) : null,
      state: row.state,
      cancel_requested: row.cancel_requested ? 1 : 0,
      continue_requested: row.continue_requested ? 1 : 0,
      continue_amount: row.continue_amount ?? null,
      result_code: row.result?.result_code ?? null,
      result: row.result ? JSON.stringify(row.result) : null,
      created_at: row.created_at,
      updated_at: row.updated_at,
    });
  }

  /** Writes a local record; answers its report to the relay, for the same commit. */
  private upsertLocal(record: TransactionRecord): LocalTransactionReport {
    this.statements.upsertLocal.run(
      record.txn.id,
      record.txn.external_id,
      record.txn.state,
      JSON.stringify(record),
      record.dueAt ?? null,
    );
    return {
      type: 'local_transaction',
      transaction: withoutFullCardNumbers({ ...record.txn, made_locally: true }),
    };
  }

  private insertReport(report: TerminalReport, at: string): OutboxEntry {
    const body = JSON.stringify(report);
    const kind = outboxKind(report);
    const info = this.statements.insertReport.run(kind, body, at);
    const local = localPart(report, at);
    return { seq: Number(info.lastInsertRowid), type: kind, body, ...(local ? { local } : {}) };
  }
}

/** One row of `statement` as the type the query selects (node:sqlite types rows loosely). */
function rowOf<Row>(statement: StatementSync, ...params: Array<string | number>): Row | undefined {
  return statement.get(...params) as Row | undefined;
}

function rowsOf<Row>(statement: StatementSync): Row[] {
  return statement.all() as Row[];
}

/** `run` in one commit (BEGIN … COMMIT); rolled back if it throws. */
function inTransaction<T>(db: DatabaseSync, run: () => T): T {
  db.exec('BEGIN');
  try {
    const result = run();
    db.exec('COMMIT');
    return result;
  } catch (error) {
    if (db.isTransaction) db.exec('ROLLBACK');
    throw error;
  }
}

function localPart(report: TerminalReport, at: string): OutboxEntry['local'] {
  if (report.type !== 'local_transaction') return undefined;
  const { id, requested_amount } = report.transaction;
  return { transactionId: id, amount: requested_amount ?? 0, at };
}

function localOf(row: { record: string } | undefined): TransactionRecord | undefined {
  return row && (JSON.parse(row.record) as TransactionRecord);
}

function fromDb(row: TransactionDbRow): TransactionRow {
  const out: TransactionRow = {
    transaction_id: row.transaction_id,
    state: row.state,
    cancel_requested: row.cancel_requested === 1,
    continue_requested: row.continue_requested === 1,
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
  if (row.request !== null) out.request = JSON.parse(row.request) as ReaderStart;
  if (row.continue_amount !== null) out.continue_amount = row.continue_amount;
  if (row.result !== null) out.result = JSON.parse(row.result) as TransactionRow['result'];
  return out;
}
