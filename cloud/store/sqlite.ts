/**
 * The embedded store: one SQLite file in WAL mode with synchronous=FULL, so a resolved
 * write has reached the disk. Reads run on the relay's thread; writes are queued as data
 * and committed in groups, here at light load and on a writer thread under load
 * (sqlite-writer.ts). A transaction change is decided on what the store holds and
 * checked again inside its commit: if the transaction moved in between (a concurrent
 * change), it is decided again on the new state (sqlite-changes.ts).
 *
 * Each port is implemented in its module (sqlite-accounts.ts, sqlite-terminals.ts,
 * sqlite-transactions.ts, sqlite-events.ts, sqlite-fleet.ts): its reads, and its writes
 * as operations of the writer (sqlite-writes.ts). This class opens the file and puts
 * them together (ports-store.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import type Database from 'better-sqlite3';
import type { Logger } from 'pino';
import { PortsStore, type StorePorts } from './ports-store.js';
import { sqliteAccounts } from './sqlite-accounts.js';
import { SqliteChanges } from './sqlite-changes.js';
import { sqliteEvents } from './sqlite-events.js';
import { sqliteFleet } from './sqlite-fleet.js';
import { migrateSqlite } from './sqlite-migrations.js';
import { sqliteTerminals } from './sqlite-terminals.js';
import { sqliteTransactions } from './sqlite-transactions.js';
import { SqliteWriter, type WriterThreadUse } from './sqlite-writer.js';
import { openSqliteFile } from './sqlite-writes.js';

export class SqliteStore extends PortsStore {
  /** The relay thread's connection: migrations, reads, and the writes of light load. */
  private readonly db: Database.Database;
  private readonly writer: SqliteWriter;
  private readonly changes: SqliteChanges;
  protected readonly ports: StorePorts;

  constructor(file: string, options: { writerThread?: WriterThreadUse; logger?: Logger } = {}) {
    super();
    // Reads and the writer thread use separate connections: they must reach the same file.
    if (file === ':memory:' || file === '') throw new Error('the SQLite store needs a file');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    this.db = openSqliteFile(file);
    try {
      migrateSqlite(this.db);
    } catch (error) {
      this.db.close();
      throw error;
    }
    this.writer = new SqliteWriter(file, this.db, options);
    this.changes = new SqliteChanges(this.db, this.writer);
    const accounts = sqliteAccounts(this.db, this.writer);
    this.ports = {
      accounts,
      settings: accounts,
      terminals: sqliteTerminals(this.db, this.writer),
      transactions: sqliteTransactions(this.db, this.writer, this.changes),
      events: sqliteEvents(this.db, this.writer),
      fleet: sqliteFleet(this.db, this.writer),
    };
  }

  async close(): Promise<void> {
    await this.writer.close();
    this.db.close();
  }
}
