/**
 * The SQLite store's writer thread: owns the connection every write goes through, so
 * that statement work and the disk flush run beside the relay's event loop, not in it.
 * Writes that arrive together share one commit (group commit), and all of them are
 * answered only after it; one refused write does not undo its neighbours. While a
 * commit runs, the next writes queue up, so batches grow with the load.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ReportOutOfOrder } from './store.js';
import { WriteConflict, openSqliteFile, sqliteWrites } from './sqlite-writes.js';
import type { ToWriter, WriteFailure, WriteOutcome } from './sqlite-writer.js';

const port = parentPort!;
const db = openSqliteFile((workerData as { file: string }).file);
const writes = sqliteWrites(db);
const inSavepoint = db.transaction((run: () => unknown) => run());
type Batch = Extract<ToWriter, { kind: 'writes' }>['writes'];
let queue: Batch = [];
let flushScheduled = false;

function describe(error: unknown): WriteFailure {
  if (error instanceof ReportOutOfOrder) return { kind: 'out-of-order', reason: error.reason };
  if (error instanceof WriteConflict) return { kind: 'conflict' };
  const { message, code } = error as { message?: unknown; code?: unknown };
  return {
    kind: 'error',
    message: typeof message === 'string' ? message : String(error),
    ...(typeof code === 'string' ? { code } : {}),
  };
}

/** A write failed after it had begun to change the database: its neighbours must be kept apart. */
class NeedsSavepoints extends Error {}

/**
 * Runs the batch in one transaction. Without savepoints, a write may fail only with a
 * refusal thrown before it changed anything (a report out of order, a stale decision);
 * any other failure undoes the whole batch, which is then run again with each write in
 * its own savepoint (they are not free, so only then).
 */
function commit(batch: Batch, savepoints: boolean): WriteOutcome[] {
  const outcomes: WriteOutcome[] = [];
  db.transaction(() => {
    for (const { id, op } of batch) {
      const run = writes[op.op] as (arg: unknown) => unknown;
      try {
        outcomes.push({
          id,
          ok: true,
          value: savepoints ? inSavepoint(() => run(op.arg)) : run(op.arg),
        });
      } catch (error) {
        const refusal = error instanceof ReportOutOfOrder || error instanceof WriteConflict;
        if (!savepoints && !refusal) throw new NeedsSavepoints();
        outcomes.push({ id, ok: false, error: describe(error) });
      }
    }
  }).immediate();
  return outcomes;
}

function flush(): void {
  flushScheduled = false;
  const batch = queue;
  queue = [];
  if (batch.length === 0) return;
  let outcomes: WriteOutcome[];
  try {
    try {
      outcomes = commit(batch, false);
    } catch (error) {
      if (!(error instanceof NeedsSavepoints)) throw error;
      outcomes = commit(batch, true);
    }
  } catch (error) {
    const failure = describe(error);
    outcomes = batch.map(({ id }) => ({ id, ok: false, error: failure }));
  }
  port.postMessage({ kind: 'outcomes', outcomes });
}

port.on('message', (message: ToWriter) => {
  if (message.kind === 'writes') {
    queue.push(...message.writes);
    if (!flushScheduled) {
      flushScheduled = true;
      setImmediate(flush);
    }
    return;
  }
  flush();
  db.close();
  port.close();
});
