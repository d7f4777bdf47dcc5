/**
 * The default journal: one SQLite file in WAL mode with synchronous=FULL, so a resolved
 * write has reached the disk before the request that depends on it is sent.
 *
 * The file is held with an exclusive lock for as long as the journal is open: two
 * clients driving the same payments would each repeat the other's creates and confirms.
 * The operating system drops the lock when the process dies, so a restarted POS opens
 * the journal of a crashed one at once.
 *
 * Schema (user_version 1):
 *
 *   payments    one row per (terminal_id, external_id): the JournalEntry, with the
 *               phase, state and result_code in columns for queries by hand
 *   payment_log every write, appended in the same commit: an audit trail of what the
 *               POS knew when
 */
import { refuseNewerSchema } from '../common/schema-version.js';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { TpsError } from './errors.js';
import {
  JOURNAL_PHASES,
  journalConflict,
  unknownPayment,
  type Journal,
  type JournalEntry,
} from './journal.js';

const MIGRATIONS = [
  `CREATE TABLE payments (
     seq INTEGER PRIMARY KEY AUTOINCREMENT,
     terminal_id TEXT NOT NULL,
     external_id TEXT NOT NULL,
     kind TEXT NOT NULL,
     origin TEXT NOT NULL,
     phase TEXT NOT NULL CHECK (phase IN (${JOURNAL_PHASES.map((p) => `'${p}'`).join(',')})),
     state TEXT,
     result_code TEXT,
     entry TEXT NOT NULL,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL,
     UNIQUE (terminal_id, external_id)
   );
   CREATE INDEX payments_unsettled ON payments (seq) WHERE phase IN ('STARTED', 'RESULT');
   CREATE TABLE payment_log (
     seq INTEGER PRIMARY KEY AUTOINCREMENT,
     at TEXT NOT NULL,
     terminal_id TEXT NOT NULL,
     external_id TEXT NOT NULL,
     phase TEXT NOT NULL,
     state TEXT,
     result_code TEXT,
     confirm_code TEXT,
     error_code TEXT
   );`,
];

interface Row {
  entry: string;
}

export interface LogRow {
  at: string;
  phase: string;
  state: string | null;
  result_code: string | null;
  confirm_code: string | null;
  error_code: string | null;
}

export class SqliteJournal implements Journal {
  private readonly db: Database.Database;
  private readonly statements;

  /** Opens (creating when needed) the journal file; JOURNAL_LOCKED when another client holds it. */
  constructor(readonly file: string) {
    fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
    this.db = new Database(file, { timeout: 200 });
    try {
      this.db.pragma('locking_mode = EXCLUSIVE');
      this.db.pragma('journal_mode = WAL');
      this.db.pragma('synchronous = FULL');
      // Takes the exclusive lock now rather than at the first payment.
      this.db.exec('BEGIN IMMEDIATE; COMMIT');
      this.migrate();
    } catch (error) {
      this.db.close();
      if ((error as { code?: unknown }).code === 'SQLITE_BUSY') {
        throw new TpsError({
          code: 'JOURNAL_LOCKED',
          message: `the journal ${file} is in use by another client (one POS client per journal)`,
          cause: error,
        });
      }
      throw error;
    }
    const db = this.db;
    this.statements = {
      insert: db.prepare(
        `INSERT INTO payments (terminal_id, external_id, kind, origin, phase, state, result_code, entry, created_at, updated_at)
         VALUES (@terminal_id, @external_id, @kind, @origin, @phase, @state, @result_code, @entry, @created_at, @updated_at)`,
      ),
      update: db.prepare(
        `UPDATE payments SET phase = @phase, state = @state, result_code = @result_code, entry = @entry, updated_at = @updated_at
         WHERE terminal_id = @terminal_id AND external_id = @external_id`,
      ),
      log: db.prepare(
        `INSERT INTO payment_log (at, terminal_id, external_id, phase, state, result_code, confirm_code, error_code)
         VALUES (@updated_at, @terminal_id, @external_id, @phase, @state, @result_code, @confirm_code, @error_code)`,
      ),
      get: db.prepare<[string, string], Row>(
        'SELECT entry FROM payments WHERE terminal_id = ? AND external_id = ?',
      ),
      unsettledAll: db.prepare<[], Row>(
        `SELECT entry FROM payments WHERE phase IN ('STARTED', 'RESULT') ORDER BY seq`,
      ),
      unsettledOf: db.prepare<[string], Row>(
        `SELECT entry FROM payments WHERE phase IN ('STARTED', 'RESULT') AND terminal_id = ? ORDER BY seq`,
      ),
      history: db.prepare<[string, string], LogRow>(
        `SELECT at, phase, state, result_code, confirm_code, error_code FROM payment_log
         WHERE terminal_id = ? AND external_id = ? ORDER BY seq`,
      ),
    };
  }

  private migrate(): void {
    const version = this.db.pragma('user_version', { simple: true }) as number;
    refuseNewerSchema(`the POS journal ${this.file}`, version, MIGRATIONS.length);
    for (let v = version; v < MIGRATIONS.length; v++) {
      this.db.transaction(() => {
        this.db.exec(MIGRATIONS[v]!);
        this.db.pragma(`user_version = ${v + 1}`);
      })();
    }
  }

  async insert(entry: JournalEntry): Promise<void> {
    const row = toRow(entry);
    this.db.transaction(() => {
      if (this.statements.get.get(entry.terminalId, entry.externalId)) throw journalConflict(entry);
      this.statements.insert.run(row);
      this.statements.log.run(row);
    })();
  }

  async update(entry: JournalEntry): Promise<void> {
    const row = toRow(entry);
    this.db.transaction(() => {
      if (this.statements.update.run(row).changes === 0) {
        throw unknownPayment(entry.terminalId, entry.externalId);
      }
      this.statements.log.run(row);
    })();
  }

  async get(terminalId: string, externalId: string): Promise<JournalEntry | undefined> {
    const row = this.statements.get.get(terminalId, externalId);
    return row && (JSON.parse(row.entry) as JournalEntry);
  }

  async unsettled(terminalId?: string): Promise<JournalEntry[]> {
    const rows =
      terminalId === undefined
        ? this.statements.unsettledAll.all()
        : this.statements.unsettledOf.all(terminalId);
    return rows.map((row) => JSON.parse(row.entry) as JournalEntry);
  }

  /** The settings the journal's promises rest on, for a check at start or in a test. */
  settings(): { journalMode: string; synchronous: number; lockingMode: string } {
    return {
      journalMode: this.db.pragma('journal_mode', { simple: true }) as string,
      synchronous: this.db.pragma('synchronous', { simple: true }) as number,
      lockingMode: this.db.pragma('locking_mode', { simple: true }) as string,
    };
  }

  /** Every write of one payment, oldest first. */
  history(terminalId: string, externalId: string): LogRow[] {
    return this.statements.history.all(terminalId, externalId);
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }
}

function toRow(entry: JournalEntry) {
  return {
    terminal_id: entry.terminalId,
    external_id: entry.externalId,
    kind: entry.kind,
    origin: entry.origin,
    phase: entry.phase,
    state: entry.transaction?.state ?? null,
    result_code: entry.transaction?.result_code ?? null,
    confirm_code: entry.confirm?.resultCode ?? null,
    error_code: entry.error?.code ?? null,
    entry: JSON.stringify(entry),
    created_at: entry.createdAt,
    updated_at: entry.updatedAt,
  };
}
