/**
 * The relay's side of the SQLite writer thread (sqlite-writer-thread.ts): queues writes
 * as data, posts the ones of one turn of the event loop together, and settles each when
 * the writer reports its commit.
 */
import { Worker } from 'node:worker_threads';
import { ReportOutOfOrder } from './store.js';
import { WriteConflict, type WriteOp, type WriteResult } from './sqlite-writes.js';

export type WriteFailure =
  | { kind: 'out-of-order'; reason: ReportOutOfOrder['reason'] }
  | { kind: 'conflict' }
  | { kind: 'error'; message: string; code?: string };

export type WriteOutcome =
  { id: number; ok: true; value: unknown } | { id: number; ok: false; error: WriteFailure };

export type ToWriter =
  { kind: 'writes'; writes: Array<{ id: number; op: WriteOp }> } | { kind: 'close' };
type FromWriter = { kind: 'outcomes'; outcomes: WriteOutcome[] };

function toError(failure: WriteFailure): Error {
  switch (failure.kind) {
    case 'out-of-order':
      return new ReportOutOfOrder(failure.reason);
    case 'conflict':
      return new WriteConflict();
    default:
      return Object.assign(new Error(failure.message), failure.code ? { code: failure.code } : {});
  }
}

/**
 * Starts the writer thread from the entry beside this module. Run from source (tests),
 * the entry is TypeScript: the thread loads it through tsx, as the tests' child
 * processes do (`--import tsx` is not applied to a worker's entry on Node 20).
 */
function startWriterThread(file: string): Worker {
  const options = { workerData: { file } };
  if (!import.meta.url.endsWith('.ts')) {
    return new Worker(new URL('./sqlite-writer-thread.js', import.meta.url), options);
  }
  const entry = JSON.stringify(new URL('./sqlite-writer-thread.ts', import.meta.url).href);
  const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'));
  return new Worker(`import(${tsx}).then(({ tsImport }) => tsImport(${entry}, ${entry}))`, {
    ...options,
    eval: true,
  });
}

export class SqliteWriter {
  private readonly worker: Worker;
  private nextId = 1;
  private readonly waiting = new Map<
    number,
    { resolve: (value: unknown) => void; reject: (error: unknown) => void }
  >();
  private outgoing: Array<{ id: number; op: WriteOp }> = [];
  private postScheduled = false;
  private stopped: Error | undefined;
  private readonly exited: Promise<void>;

  constructor(file: string) {
    this.worker = startWriterThread(file);
    // The thread keeps the process alive only while a write waits for it.
    this.worker.unref();
    this.worker.on('message', (message: FromWriter) => this.settle(message.outcomes));
    this.worker.on('error', (error) => this.stop(error));
    this.exited = new Promise((resolve) => {
      this.worker.once('exit', (code) => {
        this.stop(new Error(`the SQLite writer thread exited (code ${code})`));
        resolve();
      });
    });
  }

  write<K extends WriteOp['op']>(op: Extract<WriteOp, { op: K }>): Promise<WriteResult<K>> {
    if (this.stopped) return Promise.reject(this.stopped);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      if (this.waiting.size === 0) this.worker.ref();
      this.waiting.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.outgoing.push({ id, op });
      if (!this.postScheduled) {
        this.postScheduled = true;
        setImmediate(() => this.post());
      }
    });
  }

  private post(): void {
    this.postScheduled = false;
    if (this.outgoing.length === 0 || this.stopped) return;
    const message: ToWriter = { kind: 'writes', writes: this.outgoing };
    this.outgoing = [];
    this.worker.postMessage(message);
  }

  private settle(outcomes: WriteOutcome[]): void {
    for (const outcome of outcomes) {
      const waiter = this.waiting.get(outcome.id);
      if (!waiter) continue;
      this.waiting.delete(outcome.id);
      if (outcome.ok) waiter.resolve(outcome.value);
      else waiter.reject(toError(outcome.error));
    }
    if (this.waiting.size === 0) this.worker.unref();
  }

  private stop(error: Error): void {
    this.stopped ??= error;
    for (const waiter of this.waiting.values()) waiter.reject(this.stopped);
    this.waiting.clear();
  }

  /** Commits what is queued, then closes the writer's connection and ends the thread. */
  async close(): Promise<void> {
    this.worker.ref();
    this.post();
    if (!this.stopped) this.worker.postMessage({ kind: 'close' } satisfies ToWriter);
    await this.exited;
  }
}
