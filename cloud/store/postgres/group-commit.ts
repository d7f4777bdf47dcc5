/**
 * Group commit of the PostgreSQL store, as SQLite's writes commit in groups: the changes,
 * status updates, reports and acknowledgements that arrive while batches are running, or
 * in the same turn of the event loop, run together as one transaction on one connection,
 * and each is answered only once that commits. Commits that append events or notify
 * follow one another through their WAL flush (at the counter's lock, and at PostgreSQL's
 * notification queue): with a batch per flush rather than a write, many more get through.
 *
 * - A write goes one step after the last earlier write of its batch that shares a
 *   terminal (or command) with it, so that it reads what that one wrote; a step's writes
 *   are independent of each other and take their locks in terminal order. Connections
 *   are pipelined: a step's statements go out together in one write (its locks, then
 *   what its decisions see, each read after its own locks, in a statement of its own, so
 *   that its snapshot shows every commit that held them before; with the rows of the
 *   step before), and the last step's rows with the events, the notifications and
 *   COMMIT: a batch takes one round trip per step, and one more.
 * - A decision that throws, or a report out of order, has written nothing: that write is
 *   refused alone. A statement of one write that fails on its data (a duplicate id)
 *   aborts the transaction: it rolls back and runs again without that write. A batch a
 *   deadlock with another process picked as its victim runs again too (decisions depend
 *   only on what they read). No savepoints: each would be a subtransaction, and past 64
 *   in one transaction every snapshot taken beside it gets slower. Anything else (the
 *   connection, COMMIT) refuses the whole batch.
 * - The counter is taken once per batch, as its last step, numbering its events in
 *   order; the notifications (one per change) go out in the same statement.
 *   PostgreSQL delivers identical ones of one transaction once, which loses nothing.
 * - Up to batchConcurrency batches (default 2) run at once, each on a connection of the
 *   pool, on disjoint terminals: one takes its locks and decides while the one before
 *   waits for its flush. A write that shares a terminal with a running batch waits for a
 *   later one, in arrival order. At most batchSize writes (default 200) go in one batch,
 *   whose transaction holds their locks to its end.
 */
import type pg from 'pg';
import type { ChangeNotice } from '../../cluster/change-bus.js';
import type { NewEvent } from '../records.js';
import type { ChangeKey } from '../store.js';
import { checkout, exchange, type Failed, type Logger } from './connection.js';
import { logQuery, rowsQuery, upfrontLocks, type WritePlan } from './statements.js';

/** One write of a batch (see GroupCommit). */
export interface Write {
  /**
   * What it locks or reads ('t:' a terminal, 'c:' a command); the first orders the
   * writes of a step. Writes that share a key run in the order they arrived, and never
   * in two batches at once.
   */
  keys: string[];
  /** The terminal whose row it locks, and the original purchase a refund locks after it. */
  locks?: { terminal: string; original?: ChangeKey['original'] };
  /** Sends its locks, then its reads (through `query`); answers their results. */
  lead(query: (config: pg.QueryConfig) => Promise<pg.QueryResult>): Array<Promise<pg.QueryResult>>;
  /** Decides on what lead() answered; throws to refuse the write, which then writes nothing. */
  decide(results: pg.QueryResult[]): Decided;
}

export interface Decided {
  plan: WritePlan;
  /** The write's answer once committed, given the position of its first event. */
  answer(firstPosition: number): unknown;
}

interface Queued extends Write {
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };

/** Why an attempt at a batch did not commit; its transaction is left to roll back. */
interface Failure {
  error: unknown;
  /** The write whose statement failed (none: one of the batch's own). */
  owner?: Queued;
  /** The batch's last step failed (the events, the notifications). */
  log?: boolean;
  /** The batch's first locks failed. */
  upfront?: boolean;
  decided: Array<[Queued, Decided]>;
}

const failure = (failed: Failed<Queued>, decided: Array<[Queued, Decided]>): Failure => ({
  error: failed.error,
  ...(failed.owner ? { owner: failed.owner } : {}),
  ...(failed.part === 'log' ? { log: true } : failed.part === 'upfront' ? { upfront: true } : {}),
  decided,
});

/** A deadlock with another process's batch: the batch runs again, at most this often. */
const MAX_RETRIES = 5;
/** Errors of one write's own data (class 22: data exception; 23: integrity violation). */
const OWN_ERROR = /^2[23]/;
const sqlState = (error: unknown) =>
  typeof error === 'object' && error !== null && 'code' in error && typeof error.code === 'string'
    ? error.code
    : undefined;

/**
 * Orders a batch in steps: a write goes one step after the last earlier write it shares
 * a key with, so that its reads see that one's rows, and writes of one step are
 * independent of each other. Within a step, by key: batches take their terminals' locks
 * in one order, which keeps two processes' batches from deadlocking on them.
 */
function steps(writes: Queued[]): Queued[][] {
  const stepOf = new Map<string, number>();
  const steps: Queued[][] = [];
  for (const write of writes) {
    const step = 1 + Math.max(-1, ...write.keys.map((key) => stepOf.get(key) ?? -1));
    for (const key of write.keys) stepOf.set(key, step);
    (steps[step] ??= []).push(write);
  }
  for (const step of steps) step.sort((a, b) => (a.keys[0]! < b.keys[0]! ? -1 : 1));
  return steps;
}

/**
 * Group commit: the writes that arrive while batches are running (or in the same turn of
 * the event loop) run together, as one transaction on one connection, answered once it
 * commits. Up to `concurrency` batches run at once, on writes of disjoint keys: one
 * takes its locks and decides while the one before waits for its commit to be flushed.
 */
export class GroupCommit {
  private queue: Queued[] = [];
  /** The keys of the batches running. */
  private readonly held = new Set<string>();
  private running = 0;
  private scheduled = false;
  private waiters: Array<() => void> = [];

  constructor(
    private readonly pool: pg.Pool,
    /** A notice as its commit sends it (change-bus.ts encodeNotice). */
    private readonly encode: (change: ChangeNotice) => string,
    private readonly concurrency: number,
    private readonly maxSize: number,
    private readonly logger: Logger,
  ) {}

  write<T>(write: Write): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ ...write, resolve: resolve as (value: unknown) => void, reject });
      this.schedule();
    });
  }

  /** Resolves once every write queued has been answered. */
  async drain(): Promise<void> {
    while (this.running > 0 || this.queue.length > 0) {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  private schedule(): void {
    if (this.scheduled || this.queue.length === 0 || this.running >= this.concurrency) return;
    this.scheduled = true;
    // The writes of this turn of the event loop join the batch.
    setImmediate(() => {
      this.scheduled = false;
      this.start();
    });
  }

  private start(): void {
    while (this.running < this.concurrency) {
      const batch = this.take();
      if (batch.length === 0) return;
      const keys = new Set(batch.flatMap((write) => write.keys));
      for (const key of keys) this.held.add(key);
      this.running++;
      void this.run(batch).finally(() => {
        for (const key of keys) this.held.delete(key);
        this.running--;
        this.schedule();
        for (const waiter of this.waiters.splice(0)) waiter();
      });
    }
  }

  /**
   * The next batch: queued writes in arrival order, up to maxSize, but none that shares a
   * key with a running batch (it would wait for that one's locks) or with a write left
   * behind (they keep their order).
   */
  private take(): Queued[] {
    const batch: Queued[] = [];
    const rest: Queued[] = [];
    const blocked = new Set<string>();
    for (const write of this.queue) {
      if (
        batch.length < this.maxSize &&
        !write.keys.some((key) => this.held.has(key) || blocked.has(key))
      ) {
        batch.push(write);
      } else {
        rest.push(write);
        for (const key of write.keys) blocked.add(key);
      }
    }
    this.queue = rest;
    return batch;
  }

  /**
   * Runs a batch until it commits, then answers its writes. A statement of one write that
   * fails on its data refuses that write alone: the transaction rolls back and runs again
   * without it, as does a batch chosen as a deadlock's victim (the decisions depend only on
   * what they read). Anything else (the connection, COMMIT) refuses the whole batch.
   */
  private async run(batch: Queued[]): Promise<void> {
    const refused = new Map<Queued, unknown>();
    let live = batch;
    const answer = (outcomes: Map<Queued, Outcome> | unknown) => {
      for (const [write, error] of refused) write.reject(error);
      for (const write of live) {
        const outcome = outcomes instanceof Map ? outcomes.get(write) : undefined;
        if (!outcome) write.reject(outcomes);
        else if (outcome.ok) write.resolve(outcome.value);
        else write.reject(outcome.error);
      }
    };
    let client: pg.PoolClient;
    try {
      client = await checkout(this.pool, this.logger);
    } catch (error) {
      answer(error);
      return;
    }
    let retries = 0;
    let upfront = true;
    try {
      for (;;) {
        const result = live.length > 0 ? await this.attempt(client, live, upfront) : new Map();
        if (result instanceof Map) {
          client.release();
          answer(result);
          return;
        }
        // A no-op (with a warning from the server) when COMMIT has ended the transaction.
        await client.query('ROLLBACK').catch(() => {
          throw result.error;
        });
        const code = sqlState(result.error);
        let culprits: Queued[] = [];
        if (code === '40P01' || code === '40001') {
          if (++retries > MAX_RETRIES) throw result.error;
        } else if (result.owner && code && OWN_ERROR.test(code)) {
          culprits = [result.owner];
        } else if (result.upfront && code && OWN_ERROR.test(code)) {
          // Each write's own locks tell whose data it was.
          upfront = false;
        } else if (result.log && code === '23505') {
          culprits = await this.duplicateEvents(client, result.decided);
          if (culprits.length === 0) throw result.error;
        } else {
          throw result.error;
        }
        for (const write of culprits) refused.set(write, result.error);
        live = live.filter((write) => !refused.has(write));
      }
    } catch (error) {
      // A connection that failed, or one left in a transaction, is not reused.
      client.release(error instanceof Error ? error : new Error(String(error)));
      answer(error);
    }
  }

  /**
   * One attempt at the batch: BEGIN, with the locks of all its terminals in the order of
   * their ids, then those of the original purchases (see upfrontLocks()); then, step by step, the locks and reads of the step's
   * writes, sent together with the rows of the step before (which they may read); each
   * decision on its results; and last the rows of the last step, the events and the
   * notifications, and COMMIT. Answers each write's outcome once committed.
   */
  private async attempt(
    client: pg.PoolClient,
    writes: Queued[],
    upfront: boolean,
  ): Promise<Map<Queued, Outcome> | Failure> {
    const outcomes = new Map<Queued, Outcome>();
    const decided: Array<[Queued, Decided]> = [];
    let rows: Array<{ config: pg.QueryConfig; owner: Queued }> = [];
    for (const [i, step] of steps(writes).entries()) {
      const leads = new Map<Queued, Array<Promise<pg.QueryResult>>>();
      const failed = await exchange<Queued>(client, (query) => {
        if (i === 0) {
          query('BEGIN');
          if (upfront) for (const lock of upfrontLocks(writes)) query(lock, undefined, 'upfront');
        }
        for (const { config, owner } of rows) query(config, owner);
        for (const write of step) {
          leads.set(
            write,
            write.lead((config) => query(config, write)),
          );
        }
      });
      if (failed) return failure(failed, decided);
      rows = [];
      for (const write of step) {
        try {
          const done = write.decide(await Promise.all(leads.get(write)!));
          const query = rowsQuery(done.plan);
          if (query) rows.push({ config: query, owner: write });
          decided.push([write, done]);
        } catch (error) {
          outcomes.set(write, { ok: false, error });
        }
      }
    }
    const events: NewEvent[] = [];
    const notes: string[] = [];
    const offsets = new Map<Queued, number>();
    for (const [write, { plan }] of decided) {
      offsets.set(write, events.length);
      events.push(...plan.events);
      notes.push(...plan.notes.map(this.encode));
    }
    const last = logQuery(events, notes);
    let logged: Promise<pg.QueryResult> | undefined;
    const failed = await exchange<Queued>(client, (query) => {
      for (const { config, owner } of rows) query(config, owner);
      if (last) logged = query(last, undefined, 'log');
      query('COMMIT');
    });
    if (failed) return failure(failed, decided);
    const top: number = (logged && (await logged).rows[0]?.last) ?? 0;
    for (const [write, { answer }] of decided) {
      const position = top - events.length + offsets.get(write)! + 1;
      try {
        outcomes.set(write, { ok: true, value: answer(position) });
      } catch (error) {
        outcomes.set(write, { ok: false, error });
      }
    }
    return outcomes;
  }

  /**
   * The writes whose events' ids are taken, in the table or by an earlier write of the
   * batch: the batch's last step failed on them.
   */
  private async duplicateEvents(
    client: pg.PoolClient,
    decided: Array<[Queued, Decided]>,
  ): Promise<Queued[]> {
    const ids = decided.flatMap(([, { plan }]) => plan.events.map((event) => event.id));
    const { rows } = await client.query<{ id: string }>(
      'SELECT id FROM events WHERE id = ANY($1::text[])',
      [ids],
    );
    const taken = new Set(rows.map((row) => row.id));
    const culprits: Queued[] = [];
    for (const [write, { plan }] of decided) {
      const mine = plan.events.map((event) => event.id);
      if (mine.some((id) => taken.has(id)) || new Set(mine).size < mine.length) {
        culprits.push(write);
      } else {
        for (const id of mine) taken.add(id);
      }
    }
    return culprits;
  }
}
