/**
 * Where the SQLite store's writes are committed. The writes queued in one turn of the
 * event loop share one commit (group commit). At light load that commit runs here, on
 * the relay's thread: it is short, a commit answered without a thread hop wakes a long
 * poll soonest, and the thread's memory is not spent. While the event loop is busy,
 * batches go to the writer thread (sqlite-writer-thread.ts), so that statement work and
 * the disk flush run beside the event loop instead of in it. While the thread is
 * committing, writes follow it as soon as the task that made them ends, and it commits
 * together whatever reached it meanwhile; an idle thread gets the turn's writes in one
 * message, since waking it costs more than the wait. The thread starts the first time the loop is busy; until it is up,
 * commits stay here. A batch is committed here only when the thread holds no write, so
 * commits keep the order of the writes.
 */
import { Worker } from 'node:worker_threads';
import type Database from 'better-sqlite3';
import type { Logger } from 'pino';
import { ReportOutOfOrder } from '../delivery/report-order.js';
import { WriteConflict } from './sqlite-write-steps.js';
import {
  commitBatch,
  sqliteWrites,
  type BatchOutcome,
  type QueuedWrite,
  type SqliteWrites,
  type WriteOp,
  type WriteResult,
} from './sqlite-writes.js';

/**
 * The event loop is busy once it runs (event loop utilisation) more than BUSY_ABOVE of the
 * time, and stays busy until it falls below IDLE_BELOW. The gap keeps commits from going
 * back and forth: committing here costs the loop its flushes, so a loop that hands its
 * commits to the thread runs less, and one that takes them back runs more.
 */
const BUSY_ABOVE = 0.85;
const IDLE_BELOW = 0.5;
/** How often the event loop's load is read, over the time since the last reading. */
const LOAD_PERIOD_MS = 250;

/**
 * When batches go to the writer thread: `always` (tests run the whole store through it),
 * or while `busy()` says so; by default, while the event loop is busy.
 */
export type WriterThreadUse = 'always' | { busy: () => boolean };

/** Reads the event loop's utilisation every LOAD_PERIOD_MS. */
class EventLoopLoad {
  busy = false;
  private readonly timer: NodeJS.Timeout;

  constructor() {
    let last = performance.eventLoopUtilization();
    this.timer = setInterval(() => {
      const now = performance.eventLoopUtilization();
      const { utilization } = performance.eventLoopUtilization(now, last);
      this.busy = utilization > (this.busy ? IDLE_BELOW : BUSY_ABOVE);
      last = now;
    }, LOAD_PERIOD_MS).unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

export type WriteFailure =
  | { kind: 'out-of-order'; reason: ReportOutOfOrder['reason'] }
  | { kind: 'conflict' }
  | { kind: 'error'; name: string; message: string; stack?: string; code?: string };

export type WriteOutcome =
  { id: number; ok: true; value: unknown } | { id: number; ok: false; error: WriteFailure };

export type ToWriter = { kind: 'writes'; writes: QueuedWrite[] } | { kind: 'close' };
type FromWriter = { kind: 'ready' } | { kind: 'outcomes'; outcomes: WriteOutcome[] };

function toError(failure: WriteFailure): Error {
  switch (failure.kind) {
    case 'out-of-order':
      return new ReportOutOfOrder(failure.reason);
    case 'conflict':
      return new WriteConflict();
    default: {
      const { name, message, stack, code } = failure;
      return Object.assign(
        new Error(message),
        { name },
        stack ? { stack } : {},
        code ? { code } : {},
      );
    }
  }
}

/**
 * Starts the writer thread from the entry beside this module. Run from source (tests),
 * the entry is TypeScript: the thread loads it through tsx, as the tests' child
 * processes do (`--import tsx` is not applied to a worker's entry on Node 20).
 */
function startWriterThread(file: string): Worker {
  const options = {
    workerData: { file },
    // The thread holds one batch at a time; V8's defaults would reserve far more.
    resourceLimits: { maxYoungGenerationSizeMb: 8, maxOldGenerationSizeMb: 128 },
  };
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

interface Waiter {
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

export interface SqliteWriterOptions {
  writerThread?: WriterThreadUse;
  logger?: Logger;
}

export class SqliteWriter {
  private readonly writes: SqliteWrites;
  private thread: { worker: Worker; exited: Promise<void>; up: boolean } | undefined;
  /** Set when the thread failed: from then on every commit runs here. */
  private threadFailed = false;
  private readonly load: EventLoopLoad | undefined;
  private readonly threadUse: WriterThreadUse;
  private readonly logger: Logger | undefined;
  private nextId = 1;
  private readonly waiting = new Map<number, Waiter>();
  private queued: QueuedWrite[] = [];
  private flushScheduled = false;
  /** Writes handed to the writer thread and not yet answered. */
  private readonly withThread = new Set<number>();
  private closing = false;
  private stopped: Error | undefined;

  constructor(
    private readonly file: string,
    private readonly db: Database.Database,
    options: SqliteWriterOptions = {},
  ) {
    this.writes = sqliteWrites(db);
    this.logger = options.logger;
    if (options.writerThread) {
      this.threadUse = options.writerThread;
    } else {
      const load = (this.load = new EventLoopLoad());
      this.threadUse = { busy: () => load.busy };
    }
  }

  /** The writer thread has started and takes batches (diagnostics, tests). */
  get threadUp(): boolean {
    return this.thread?.up ?? false;
  }

  write<K extends WriteOp['op']>(op: Extract<WriteOp, { op: K }>): Promise<WriteResult<K>> {
    if (this.stopped) return Promise.reject(this.stopped);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.queued.push({ id, op });
      this.scheduleFlush();
    });
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    // Writes for a writer thread that holds writes (it is committing) leave when the task
    // that made them ends: it merges them into its next commit while this loop goes on.
    // A thread that holds none sleeps, and waking it costs a system call and a wake-up on
    // the other core: the turn's writes go together, in one message. Writes committed
    // here also wait for the end of the turn, so that one commit serves the whole turn.
    // (The thread holds writes only while it is up.)
    if (this.withThread.size > 0 && this.toThread()) {
      queueMicrotask(() => this.flush());
    } else {
      setImmediate(() => this.flush());
    }
  }

  /** Whether batches go to the writer thread now. */
  private toThread(): boolean {
    return (
      !this.threadFailed && !this.closing && (this.threadUse === 'always' || this.threadUse.busy())
    );
  }

  private flush(): void {
    this.flushScheduled = false;
    const batch = this.queued;
    this.queued = [];
    if (batch.length === 0 || this.stopped) return;
    const toThread = this.toThread();
    if (!toThread && this.withThread.size > 0) {
      // Back to this thread, but the writer thread still holds writes made before these:
      // they wait for its answer (which flushes them), so that commits keep their order.
      this.queued = batch.concat(this.queued);
      return;
    }
    if (toThread) this.thread ??= this.startThread();
    if (!toThread || !this.thread?.up) {
      this.settle(commitBatch(this.db, this.writes, batch));
      return;
    }
    const { worker } = this.thread;
    try {
      worker.postMessage({ kind: 'writes', writes: batch } satisfies ToWriter);
    } catch (error) {
      // Nothing of the batch reached the thread: it fails whole, as a commit would.
      this.settle(batch.map(({ id }) => ({ id, ok: false, error })));
      return;
    }
    if (this.withThread.size === 0) worker.ref();
    for (const { id } of batch) this.withThread.add(id);
  }

  private startThread(): { worker: Worker; exited: Promise<void>; up: boolean } {
    const worker = startWriterThread(this.file);
    const thread = { worker, exited: Promise.resolve(), up: this.threadUse === 'always' };
    // The thread keeps the process alive only while it holds a write.
    worker.unref();
    worker.on('message', (message: FromWriter) => {
      if (message.kind === 'ready') {
        thread.up = true;
        return;
      }
      for (const { id } of message.outcomes) this.withThread.delete(id);
      if (this.withThread.size === 0) worker.unref();
      this.settle(
        message.outcomes.map((o) => (o.ok ? o : { id: o.id, ok: false, error: toError(o.error) })),
      );
      if (this.withThread.size === 0 && this.queued.length > 0) this.scheduleFlush();
    });
    worker.on('error', (error) => this.threadFailure(error));
    thread.exited = new Promise<void>((resolve) => {
      worker.once('exit', (code) => {
        if (!this.closing) this.threadFailure(new Error(`the writer thread exited (code ${code})`));
        resolve();
      });
    });
    return thread;
  }

  /**
   * The thread died: the writes it held fail (each may or may not have been committed, as
   * with a crash, and their callers' retries are idempotent), and every commit from now on
   * runs on this thread.
   */
  private threadFailure(error: Error): void {
    if (this.threadFailed) return;
    this.threadFailed = true;
    this.logger?.error(
      { err: error },
      'SQLite writer thread failed; committing on the main thread',
    );
    const failed = [...this.withThread].map((id) => ({ id, ok: false as const, error }));
    this.withThread.clear();
    this.settle(failed);
    if (this.queued.length > 0) this.scheduleFlush();
  }

  private settle(outcomes: BatchOutcome[]): void {
    for (const outcome of outcomes) {
      const waiter = this.waiting.get(outcome.id);
      if (!waiter) continue;
      this.waiting.delete(outcome.id);
      if (outcome.ok) waiter.resolve(outcome.value);
      else waiter.reject(outcome.error);
    }
  }

  /** Commits what is queued, then ends the writer thread (the connection is the caller's). */
  async close(): Promise<void> {
    this.closing = true;
    this.load?.stop();
    this.flush();
    if (this.thread && !this.threadFailed) {
      this.thread.worker.ref();
      this.thread.worker.postMessage({ kind: 'close' } satisfies ToWriter);
      await this.thread.exited;
    }
    // Writes that waited for the thread's last ones.
    this.flush();
    this.stopped = new Error('the store is closed');
    for (const waiter of this.waiting.values()) waiter.reject(this.stopped);
    this.waiting.clear();
  }
}
