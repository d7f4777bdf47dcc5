/**
 * The SQLite store's writer thread (see sqlite-writer.ts): commits the batches the relay
 * thread hands it on its own connection, beside the relay's event loop. While a commit
 * runs, the next batches queue up and are committed together, so commits grow with the
 * load.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { ReportOutOfOrder } from '../delivery/report-order.js';
import { WriteConflict } from './sqlite-write-steps.js';
import { commitBatch, openSqliteFile, sqliteWrites, type QueuedWrite } from './sqlite-writes.js';
import type { ToWriter, WriteFailure, WriteOutcome } from './sqlite-writer.js';

const port = parentPort!;
const db = openSqliteFile((workerData as { file: string }).file);
const writes = sqliteWrites(db);
let queue: QueuedWrite[] = [];
let flushScheduled = false;

/** An error as data: the relay thread makes the same kind of error of it again. */
function describe(error: unknown): WriteFailure {
  if (error instanceof ReportOutOfOrder) return { kind: 'out-of-order', reason: error.reason };
  if (error instanceof WriteConflict) return { kind: 'conflict' };
  const { name, message, stack, code } = error as Record<string, unknown>;
  return {
    kind: 'error',
    name: typeof name === 'string' ? name : 'Error',
    message: typeof message === 'string' ? message : String(error),
    ...(typeof stack === 'string' ? { stack } : {}),
    ...(typeof code === 'string' ? { code } : {}),
  };
}

function flush(): void {
  flushScheduled = false;
  const batch = queue;
  queue = [];
  if (batch.length === 0) return;
  const outcomes: WriteOutcome[] = commitBatch(db, writes, batch).map((outcome) =>
    outcome.ok ? outcome : { id: outcome.id, ok: false, error: describe(outcome.error) },
  );
  port.postMessage({ kind: 'outcomes', outcomes });
}

// Until this arrives, the relay thread commits on its own (sqlite-writer.ts).
port.postMessage({ kind: 'ready' });

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
