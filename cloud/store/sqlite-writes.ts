/**
 * Every write of the SQLite store, as operations on plain data so that they can run on
 * the writer thread (sqlite-writer.ts): each takes one structured-cloneable argument and
 * returns a structured-cloneable value. They run inside the writer's shared commit. Each
 * port's writes are in its module (sqlite-<port>.ts); the steps they share in a commit,
 * in sqlite-write-steps.ts.
 */
import Database from 'better-sqlite3';
import { ReportOutOfOrder } from '../delivery/report-order.js';
import { accountWrites } from './sqlite-accounts.js';
import { eventWrites } from './sqlite-events.js';
import { fleetWrites } from './sqlite-fleet.js';
import { pairingWrites } from './sqlite-pairings.js';
import { rolloutWrites } from './sqlite-rollouts.js';
import { terminalWrites } from './sqlite-terminals.js';
import { transactionWrites } from './sqlite-transactions.js';
import { WriteConflict, writeSteps, type OpOf, type ResultOf } from './sqlite-write-steps.js';

/** The page size of a new store file (see openSqliteFile). */
export const PAGE_SIZE = 16_384;
const WAL_CHECKPOINT_BYTES = 16 * 1024 * 1024;

/** Opens a connection with the settings every connection to the store's file uses. */
export function openSqliteFile(file: string): Database.Database {
  const db = new Database(file);
  // A new file gets 16 KB pages (an existing one keeps its own). A commit writes each page
  // it touched whole, two system calls a page; with the relay's scattered writes (one row
  // of each terminal's transaction, status and index entries) larger pages mean far fewer
  // calls for a little more data: 4 KB pages held the purchase flows bench near 2,000
  // flows/s, 16 KB pages carry it past 2,300 (docs/performance.md).
  db.pragma(`page_size = ${PAGE_SIZE}`);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  // Checkpoint the WAL into the database every ~16 MB rather than every 4 MB: fewer,
  // larger copies under a steady stream of commits. The setting counts pages.
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  db.pragma(`wal_autocheckpoint = ${Math.round(WAL_CHECKPOINT_BYTES / pageSize)}`);
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  return db;
}

export function sqliteWrites(db: Database.Database) {
  const steps = writeSteps(db);
  return {
    ...accountWrites(db, steps),
    ...terminalWrites(db, steps),
    ...transactionWrites(db, steps),
    ...eventWrites(db, steps),
    ...pairingWrites(db, steps),
    ...fleetWrites(db),
    ...rolloutWrites(db),
  };
}

export type SqliteWrites = ReturnType<typeof sqliteWrites>;

/** One write as data: the operation's name and its argument. */
export type WriteOp = OpOf<SqliteWrites>;
export type WriteResult<K extends WriteOp['op']> = ResultOf<SqliteWrites, K>;

/** One queued write: its id (to answer it) and the operation. */
export interface QueuedWrite {
  id: number;
  op: WriteOp;
}

export type BatchOutcome =
  { id: number; ok: true; value: unknown } | { id: number; ok: false; error: unknown };

/**
 * Each connection's transaction wrapper, made once (making one is not free): its
 * `immediate` form opens a batch's transaction, and called inside it, it is a savepoint.
 */
const wrappers = new WeakMap<
  Database.Database,
  Database.Transaction<(run: () => unknown) => unknown>
>();
function transactionOf(db: Database.Database) {
  let wrapper = wrappers.get(db);
  if (!wrapper) {
    wrapper = db.transaction((run: () => unknown) => run());
    wrappers.set(db, wrapper);
  }
  return wrapper;
}

/** A write failed after it had begun to change the database: its neighbours must be kept apart. */
class NeedsSavepoints extends Error {}

/**
 * Commits a batch of writes as one transaction (group commit), so that they share one
 * flush, and answers each. Without savepoints, a write may fail only with a refusal thrown
 * before it changed anything (a report out of order, a stale decision); any other failure
 * undoes the whole batch, which is then run again with each write in its own savepoint
 * (they are not free, so only then). One refused write never undoes its neighbours.
 */
export function commitBatch(
  db: Database.Database,
  writes: SqliteWrites,
  batch: QueuedWrite[],
): BatchOutcome[] {
  const transaction = transactionOf(db);
  const attempt = (savepoints: boolean): BatchOutcome[] => {
    const outcomes: BatchOutcome[] = [];
    transaction.immediate(() => {
      for (const { id, op } of batch) {
        const run = writes[op.op] as (arg: unknown) => unknown;
        try {
          const value = savepoints ? transaction(() => run(op.arg)) : run(op.arg);
          outcomes.push({ id, ok: true, value });
        } catch (error) {
          const refusal = error instanceof ReportOutOfOrder || error instanceof WriteConflict;
          if (!savepoints && !refusal) throw new NeedsSavepoints();
          outcomes.push({ id, ok: false, error });
        }
      }
    });
    return outcomes;
  };
  try {
    try {
      return attempt(false);
    } catch (error) {
      if (!(error instanceof NeedsSavepoints)) throw error;
      return attempt(true);
    }
  } catch (error) {
    return batch.map(({ id }) => ({ id, ok: false, error }));
  }
}
