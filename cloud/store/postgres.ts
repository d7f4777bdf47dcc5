/**
 * The shared store: PostgreSQL, for several relay processes on one database. Behaves as
 * the SQLite store does (sqlite.ts is the reference); what differs is how it stays right
 * with other processes committing beside it:
 *
 * - A change locks its terminal's row first (`FOR UPDATE`): every change of one terminal,
 *   in whichever process, waits for the one before it, so the checks its decision makes
 *   (one active transaction, the unconfirmed limit, a report's order) hold across
 *   processes. A referenced refund also locks its original purchase, so refunds through
 *   different terminals reserve its amount one after the other.
 * - Event positions come from a one-row counter taken as the last step before COMMIT: its
 *   row lock, held until the commit, hands out positions in commit order, so a reader
 *   that has read up to a position never sees a lower one appear later.
 * - A commit that changed something NOTIFYs `tps_changes` in the same transaction, so the
 *   other processes hear of it only if it commits (see watch()). Leadership is a session
 *   advisory lock, which the database drops with the session of a process that dies.
 *   Both are scoped to the schema: relays of another schema in the database are not
 *   this store's peers.
 *
 * Writes commit in groups, as SQLite's do (see GroupCommit): the changes, status updates,
 * reports and acknowledgements that arrive while batches are running, or in the same turn
 * of the event loop, run together as one transaction on one connection, and each is
 * answered only once that commits. Commits that append events or notify follow one
 * another through their WAL flush (at the counter's lock, and at PostgreSQL's
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
 *
 * Reads go to the pool directly, outside the batches.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { z } from 'zod';
import {
  EVENT_KINDS,
  type TerminalCommand,
  type TerminalReadings,
  type TerminalStatus,
} from '../../protocol/index.js';
import type {
  CredentialRecord,
  EventQuery,
  EventRecord,
  NewEvent,
  PendingCommand,
  TerminalRecord,
  TransactionRecord,
  WebhookRecord,
} from './records.js';
import {
  ReportOutOfOrder,
  checkReport,
  type ChangeContext,
  type ChangeKey,
  type Decide,
  type Leadership,
  type ReportPosition,
  type Store,
  type StoreChange,
} from './store.js';
import {
  ACTIVE_STATES,
  TRIMMED_SETTING,
  UNCONFIRMED_STATES,
  toEvent,
  terminalValues,
  toTerminal,
  toTransaction,
  type EventRow,
  type TransactionRow,
  type TerminalRow as BaseTerminalRow,
} from './rows.js';
import { POSTGRES_MIGRATIONS } from './postgres-migrations.js';

export interface PostgresStoreOptions {
  /** The schema the tables live in (created if missing); default: the search_path's first. */
  schema?: string;
  /** Connections of the pool (default 8); watch() and each leadership use one more. */
  poolSize?: number;
  /**
   * Batches of writes committing at once, each on a connection of the pool (default 2;
   * at most poolSize).
   */
  batchConcurrency?: number;
  /** Writes in one batch at most (default 200): one transaction holds their locks. */
  batchSize?: number;
  /** How often leadership tries again to take the lock, in ms (default 1000). */
  leaderRetryMs?: number;
  /** Told of what the store recovers from or ignores (a lost connection, a foreign notification). */
  logger?: { warn(details: object, message: string): void };
}

/** The channel of StoreChange notifications. */
const CHANNEL = 'tps_changes';
/** pg_advisory_xact_lock key under which migrations run (one database-wide key). */
const MIGRATION_LOCK = '7370880201';
/** First half of the leadership lock's key; the second is hashtext(schema). */
const LEADER_LOCK_CLASS = 1953526529;
const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5000;

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** int8 (counts, positions, sequence numbers) as numbers: they stay far below 2^53. */
const INT8_OID = 20;
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary'
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

/** A terminal row with the newest report applied from its agent. */
interface TerminalRow extends BaseTerminalRow {
  last_report_journal: string | null;
  last_report_seq: number;
}

const lastReportOf = (row: TerminalRow | undefined) => ({
  journal: row?.last_report_journal ?? undefined,
  seq: row?.last_report_seq ?? 0,
});

const TX_COLUMNS = 'id, account_id, original_id, due_at, version, body';
const TERMINAL_COLUMNS =
  'id, account_id, kind, capabilities, status, created_at, last_report_journal, last_report_seq';

const LOCK_TERMINAL = {
  name: 'tps_lock_terminal',
  text: `SELECT ${TERMINAL_COLUMNS} FROM terminals WHERE id = $1 FOR UPDATE`,
};
const LOCK_TRANSACTION = {
  name: 'tps_lock_transaction',
  text: 'SELECT 1 FROM transactions WHERE terminal_id = $1 AND external_id = $2 FOR UPDATE',
};

/** One row as JSON, of the transaction `where` selects (or null). */
const transactionJson = (where: string) =>
  `(SELECT row_to_json(x) FROM (SELECT ${TX_COLUMNS} FROM transactions WHERE ${where}) x)`;

/**
 * What a decision sees, in one statement. It runs after the locks, in a statement of its
 * own, so that its snapshot shows every commit that held them before.
 */
function contextQuery(forCreate: boolean, original: boolean): { name: string; text: string } {
  const columns = [`${transactionJson('terminal_id = $1 AND external_id = $2')} AS current`];
  if (forCreate) {
    columns.push(
      `${transactionJson(`terminal_id = $1 AND state IN ${ACTIVE_STATES} AND external_id <> $2 LIMIT 1`)} AS active`,
      `(SELECT count(*) FROM transactions WHERE terminal_id = $1 AND state IN ${UNCONFIRMED_STATES}) AS unconfirmed`,
    );
  }
  if (original) {
    columns.push(
      `${transactionJson('terminal_id = $3 AND external_id = $4')} AS original`,
      `(SELECT coalesce(json_agg(x ORDER BY x.id), '[]'::json) FROM (SELECT ${TX_COLUMNS} FROM transactions
        WHERE original_id = (SELECT id FROM transactions WHERE terminal_id = $3 AND external_id = $4)) x) AS refunds`,
    );
  }
  return {
    name: `tps_context_${forCreate ? 'c' : ''}${original ? 'o' : ''}`,
    text: `SELECT ${columns.join(', ')}`,
  };
}
const CONTEXT_QUERIES = new Map(
  [false, true].flatMap((forCreate) =>
    [false, true].map((original) => [
      `${forCreate}/${original}`,
      contextQuery(forCreate, original),
    ]),
  ),
);

interface ContextRow {
  current: TransactionRow | null;
  active?: TransactionRow | null;
  unconfirmed?: number;
  original?: TransactionRow | null;
  refunds?: TransactionRow[];
}

/** What one write of a batch changes in its rows, and what it adds to the batch's last step. */
interface WritePlan {
  terminalId: string;
  /** The terminal's new status (JSON). */
  status?: string;
  report?: ReportPosition;
  transaction?: TransactionRecord;
  commands?: TerminalCommand[];
  events: NewEvent[];
  notes: StoreChange[];
}

/** Builds one statement: numbered parameters, and a name telling its variant. */
class StatementBuilder {
  readonly values: unknown[] = [];
  readonly parts: string[] = [];
  name: string;
  constructor(name: string) {
    this.name = name;
  }
  $ = (value: unknown, cast = '') => `$${this.values.push(value)}${cast}`;
  build(select: string): pg.QueryConfig {
    const text = `${this.parts.length > 0 ? `WITH ${this.parts.join(',\n')}\n` : ''}${select}`;
    return { name: this.name, text, values: this.values };
  }
}

/**
 * The rows a write changes (terminal, transaction, commands), as one statement or none.
 * The SQL depends only on which parts are present (lists travel as arrays), so each
 * variant is a named, prepared statement.
 */
function rowsQuery(plan: WritePlan): pg.QueryConfig | undefined {
  const rows = new StatementBuilder('tps_rows_');
  const { $ } = rows;
  if (plan.status !== undefined || plan.report) {
    const sets: string[] = [];
    if (plan.status !== undefined) sets.push(`status = ${$(plan.status)}`);
    if (plan.report) {
      sets.push(`last_report_journal = ${$(plan.report.journal)}`);
      sets.push(`last_report_seq = ${$(plan.report.seq, '::bigint')}`);
    }
    rows.parts.push(
      `term AS (UPDATE terminals SET ${sets.join(', ')} WHERE id = ${$(plan.terminalId)})`,
    );
    rows.name += `${plan.status !== undefined ? 's' : ''}${plan.report ? 'r' : ''}`;
  }
  if (plan.transaction) {
    const { txn, accountId, originalId, dueAt, version } = plan.transaction;
    rows.parts.push(
      `txn AS (INSERT INTO transactions (id, terminal_id, external_id, account_id, state, original_id, due_at, version, body)
        VALUES (${[
          $(txn.id),
          $(txn.terminal_id),
          $(txn.external_id),
          $(accountId),
          $(txn.state),
          $(originalId ?? null),
          $(dueAt ?? null),
          $(version, '::integer'),
          $(JSON.stringify(txn)),
        ].join(', ')})
        ON CONFLICT (id) DO UPDATE SET state = excluded.state, due_at = excluded.due_at,
          version = excluded.version, body = excluded.body)`,
    );
    rows.name += 't';
  }
  if (plan.commands?.length) {
    const ids = $(
      plan.commands.map((c) => c.command_id),
      '::text[]',
    );
    const bodies = $(
      plan.commands.map((c) => JSON.stringify(c)),
      '::text[]',
    );
    rows.parts.push(
      `cmd AS (INSERT INTO terminal_commands (command_id, terminal_id, body, created_at)
        SELECT u.command_id, ${$(plan.terminalId)}, u.body, ${$(new Date().toISOString())}
        FROM unnest(${ids}, ${bodies}) WITH ORDINALITY AS u(command_id, body, ord) ORDER BY u.ord)`,
    );
    rows.name += 'c';
  }
  return rows.parts.length > 0 ? rows.build('SELECT 1') : undefined;
}

/**
 * A batch's last step before COMMIT, as one statement or none: the event counter, taken
 * once for the batch, with all its events in order, then the notifications (pg_notify
 * takes effect only if the transaction commits). Answers the counter's new value.
 */
function logQuery(events: NewEvent[], notes: string[]): pg.QueryConfig | undefined {
  if (events.length === 0 && notes.length === 0) return undefined;
  const log = new StatementBuilder('tps_log_');
  if (events.length > 0) {
    const n = log.$(events.length, '::bigint');
    const column = (pick: (e: NewEvent) => string) => log.$(events.map(pick), '::text[]');
    log.parts.push(
      `pos AS (UPDATE event_positions SET last = last + ${n} RETURNING last)`,
      `ev AS (INSERT INTO events (position, id, account_id, subject, kind, time, data)
        SELECT pos.last - ${n} + u.ord, u.id, u.account_id, u.subject, u.kind, u.time, u.data
        FROM pos, unnest(${[
          column((e) => e.id),
          column((e) => e.accountId),
          column((e) => e.subject),
          column((e) => e.kind),
          column((e) => e.time),
          column((e) => JSON.stringify(e.data)),
        ].join(', ')}) WITH ORDINALITY AS u(id, account_id, subject, kind, time, data, ord))`,
    );
    log.name += 'e';
  }
  const last = events.length > 0 ? '(SELECT last FROM pos)' : 'NULL::bigint';
  if (notes.length === 0) return log.build(`SELECT ${last} AS last`);
  log.name += 'n';
  // One row, however many notes: count(pg_notify(...)) calls it once per note.
  return log.build(
    `SELECT ${last} AS last, count(pg_notify('${CHANNEL}', note)) AS notified
     FROM unnest(${log.$(notes, '::text[]')}) AS note`,
  );
}

/**
 * Sends what `send` queries (pipelined, the connection does not wait for answers) in one
 * write to the socket rather than one each.
 */
function together<T>(client: pg.PoolClient, send: () => T): T {
  const { stream } = client.connection;
  stream.cork();
  try {
    return send();
  } finally {
    stream.uncork();
  }
}

const eventsNotice = (events: NewEvent[]): StoreChange => ({
  kind: 'events',
  events: events.map(({ accountId, subject, kind }) => ({ accountId, subject, kind })),
});

/** A change as another process announced it (the shape of StoreChange, checked below). */
const ChangeSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('transaction'),
    terminalId: z.string(),
    externalId: z.string(),
    version: z.number(),
    dueAt: z.string().optional(),
  }),
  z.object({
    kind: z.literal('events'),
    events: z
      .array(z.object({ accountId: z.string(), subject: z.string(), kind: z.enum(EVENT_KINDS) }))
      .optional(),
  }),
  z.object({ kind: z.literal('command-acked'), commandId: z.string() }),
  z.object({ kind: z.literal('report'), terminalId: z.string() }),
  z.object({ kind: z.literal('webhooks') }),
  z.object({ kind: z.literal('simulator'), terminalId: z.string() }),
  z.object({ kind: z.literal('resync') }),
]);
/** Fails to compile when StoreChange gains a member the schema does not know. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const schemaMatchesStoreChange: Same<z.infer<typeof ChangeSchema>, StoreChange> = true;
void schemaMatchesStoreChange;

/** A notification on the channel; anything else there is ignored. */
const Notification = z.object({ origin: z.string(), schema: z.string(), change: ChangeSchema });

/** Well below NOTIFY's 8000 bytes: past it, an events notice leaves out which events. */
const NOTICE_MAX_BYTES = 2000;

/** One write of a batch (see GroupCommit). */
interface Write {
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

interface Decided {
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
class GroupCommit {
  private queue: Queued[] = [];
  /** The keys of the batches running. */
  private readonly held = new Set<string>();
  private running = 0;
  private scheduled = false;
  private waiters: Array<() => void> = [];

  constructor(
    private readonly pool: pg.Pool,
    private readonly envelope: (change: StoreChange) => string,
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
      const failed = await exchange(client, (query) => {
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
      if (failed) return { ...failed, decided };
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
      notes.push(...plan.notes.map(this.envelope));
    }
    const last = logQuery(events, notes);
    let logged: Promise<pg.QueryResult> | undefined;
    const failed = await exchange(client, (query) => {
      for (const { config, owner } of rows) query(config, owner);
      if (last) logged = query(last, undefined, 'log');
      query('COMMIT');
    });
    if (failed) return { ...failed, decided };
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

/**
 * A connection of the pool. Should it drop while checked out, its queries fail, and the
 * error it emits is logged rather than left to end the process (the pool listens only
 * while the connection is idle); release() takes the listener off again.
 */
async function checkout(pool: pg.Pool, logger: Logger): Promise<pg.PoolClient> {
  const client = await pool.connect();
  const lost = (error: Error) =>
    logger.warn({ err: error }, 'PostgreSQL connection lost while in use');
  client.on('error', lost);
  const release = client.release.bind(client);
  client.release = (error?: Error | boolean) => {
    // A connection released with an error is ended: it may still report one.
    if (!error) client.off('error', lost);
    release(error);
  };
  return client;
}

/**
 * Sends the statements `send` queries together (see together()) and waits for all of
 * them; answers the first that failed (those after it fail as the transaction is aborted).
 */
async function exchange(
  client: pg.PoolClient,
  send: (
    query: (
      config: pg.QueryConfig | string,
      owner?: Queued,
      part?: 'upfront' | 'log',
    ) => Promise<pg.QueryResult>,
  ) => void,
): Promise<Omit<Failure, 'decided'> | undefined> {
  const sent: Array<{ result: Promise<pg.QueryResult>; owner?: Queued; part?: string }> = [];
  together(client, () =>
    send((config, owner, part) => {
      const result = client.query(config);
      sent.push({ result, ...(owner ? { owner } : {}), ...(part ? { part } : {}) });
      return result;
    }),
  );
  const settled = await Promise.allSettled(sent.map(({ result }) => result));
  const i = settled.findIndex(({ status }) => status === 'rejected');
  if (i < 0) return undefined;
  const { owner, part } = sent[i]!;
  return {
    error: (settled[i] as PromiseRejectedResult).reason,
    ...(owner ? { owner } : {}),
    ...(part === 'log' ? { log: true } : part === 'upfront' ? { upfront: true } : {}),
  };
}

/**
 * A batch's first locks: all its terminals, then all the original purchases its refunds
 * lock, each set in one statement that takes them in the order of their ids. Every batch
 * taking them so, two batches (of this process or another) never wait for each other's
 * terminals in a circle, as they could if each took them step by step. A write still
 * takes its own locks again in its step (at once: they are held), for what they answer.
 */
function upfrontLocks(writes: Queued[]): pg.QueryConfig[] {
  const terminals = [...new Set(writes.flatMap((write) => write.locks?.terminal ?? []))];
  const originals = writes.flatMap((write) => write.locks?.original ?? []);
  const locks: pg.QueryConfig[] = [];
  if (terminals.length > 1) {
    locks.push({
      name: 'tps_lock_terminals',
      text: 'SELECT 1 FROM terminals WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE',
      values: [terminals],
    });
  }
  if (originals.length > 1) {
    locks.push({
      name: 'tps_lock_originals',
      text: `SELECT 1 FROM transactions t
             JOIN unnest($1::text[], $2::text[]) AS k(terminal_id, external_id) USING (terminal_id, external_id)
             ORDER BY t.id FOR UPDATE OF t`,
      values: [originals.map((o) => o.terminalId), originals.map((o) => o.externalId)],
    });
  }
  return locks;
}

type Logger = NonNullable<PostgresStoreOptions['logger']>;
const silent: Logger = { warn: () => {} };

export class PostgresStore implements Store {
  /** Tells this store's own notifications from the other processes'. */
  private readonly origin = randomBytes(8).toString('hex');
  private readonly listeners = new Set<(change: StoreChange) => void>();
  private readonly leaderships = new Set<PostgresLeadership>();
  private changeFeed: ChangeFeed | undefined;
  private closed = false;
  private readonly batches: GroupCommit;

  private constructor(
    private readonly pool: pg.Pool,
    /** How to open a connection of one's own (listener, leadership). */
    private readonly connection: pg.ClientConfig,
    /** The schema the tables are in: it scopes notifications and the leadership lock. */
    private readonly schema: string,
    private readonly options: PostgresStoreOptions,
    private readonly logger: Logger,
  ) {
    this.batches = new GroupCommit(
      pool,
      this.envelope,
      Math.max(1, Math.min(options.batchConcurrency ?? 2, options.poolSize ?? 8)),
      Math.max(1, options.batchSize ?? 200),
      logger,
    );
  }

  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const { schema } = options;
    if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
      throw new Error(
        `invalid schema name ${JSON.stringify(schema)}: lower-case letters, digits and _`,
      );
    }
    const connection: pg.ClientConfig = {
      connectionString: url,
      types,
      ...(schema !== undefined ? { options: `-c search_path=${schema}` } : {}),
    };
    const logger = options.logger ?? silent;
    const pool = new pg.Pool({
      ...connection,
      // Statements go out without waiting for the answers before them (see together()).
      pipeline: true,
      max: options.poolSize ?? 8,
      // A process stalled inside a transaction (its terminal's row locked) lets go in time.
      idle_in_transaction_session_timeout: 30_000,
    });
    // An idle connection that drops is taken out of the pool; without a listener its
    // error would end the process.
    pool.on('error', (error) => logger.warn({ err: error }, 'PostgreSQL pool connection lost'));
    try {
      const current = await migrate(pool, schema);
      return new PostgresStore(pool, connection, current, options, logger);
    } catch (error) {
      await pool.end();
      throw error;
    }
  }

  /** Runs `work` on a connection of the pool; on failure rolls back what it left open. */
  private async withClient<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await checkout(this.pool, this.logger);
    try {
      const result = await work(client);
      client.release();
      return result;
    } catch (error) {
      try {
        // A no-op (with a warning from the server) when no transaction is open.
        await client.query('ROLLBACK');
        client.release();
      } catch (rollbackError) {
        client.release(rollbackError as Error);
      }
      throw error;
    }
  }

  private readonly envelope = (change: StoreChange): string => {
    const note = JSON.stringify({ origin: this.origin, schema: this.schema, change });
    if (change.kind !== 'events' || Buffer.byteLength(note) <= NOTICE_MAX_BYTES) return note;
    // Too many to list: the readers read again.
    return JSON.stringify({ origin: this.origin, schema: this.schema, change: { kind: 'events' } });
  };

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // The writes queued are answered first.
    await this.batches.drain();
    this.listeners.clear();
    await Promise.all([
      ...[...this.leaderships].map((leadership) => leadership.stop()),
      this.changeFeed?.close(),
    ]);
    await this.pool.end();
  }

  async ensureAccount(accountId: string, createdAt: string): Promise<void> {
    await this.pool.query(
      'INSERT INTO accounts (id, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING',
      [accountId, createdAt],
    );
  }

  async putCredential(c: CredentialRecord): Promise<void> {
    await this.pool.query(
      `INSERT INTO credentials (username, secret_hash, account_id, terminal_id, created_at)
       VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (username) DO UPDATE SET secret_hash = excluded.secret_hash,
         account_id = excluded.account_id, terminal_id = excluded.terminal_id`,
      [c.username, c.secretHash, c.accountId, c.terminalId ?? null, c.createdAt],
    );
  }

  async findCredential(username: string): Promise<CredentialRecord | undefined> {
    const { rows } = await this.pool.query<{
      username: string;
      secret_hash: string;
      account_id: string;
      terminal_id: string | null;
      created_at: string;
    }>({
      name: 'tps_credential',
      text: 'SELECT username, secret_hash, account_id, terminal_id, created_at FROM credentials WHERE username = $1',
      values: [username],
    });
    const row = rows[0];
    if (!row) return undefined;
    return {
      username: row.username,
      secretHash: row.secret_hash,
      accountId: row.account_id,
      ...(row.terminal_id ? { terminalId: row.terminal_id } : {}),
      createdAt: row.created_at,
    };
  }

  async createTerminal(t: TerminalRecord): Promise<void> {
    await this.pool.query(
      'INSERT INTO terminals (id, account_id, kind, capabilities, status, created_at) VALUES ($1, $2, $3, $4, $5, $6)',
      terminalValues(t),
    );
  }

  async putAgentCredential(terminalId: string, secretHash: string, createdAt: string) {
    await this.pool.query(
      `INSERT INTO agent_credentials (terminal_id, secret_hash, created_at) VALUES ($1, $2, $3)
       ON CONFLICT (terminal_id) DO UPDATE SET secret_hash = excluded.secret_hash`,
      [terminalId, secretHash, createdAt],
    );
  }

  async findAgentCredential(terminalId: string): Promise<string | undefined> {
    const { rows } = await this.pool.query<{ secret_hash: string }>(
      'SELECT secret_hash FROM agent_credentials WHERE terminal_id = $1',
      [terminalId],
    );
    return rows[0]?.secret_hash;
  }

  async lastReport(terminalId: string): Promise<{ journal: string | undefined; seq: number }> {
    const { rows } = await this.pool.query<TerminalRow>(
      'SELECT last_report_journal, last_report_seq FROM terminals WHERE id = $1',
      [terminalId],
    );
    return lastReportOf(rows[0]);
  }

  /** Throws ReportOutOfOrder unless the report is next after the locked row's last one. */
  private takeReport(row: TerminalRow | undefined, position: ReportPosition, plan: WritePlan) {
    const verdict = checkReport(lastReportOf(row), position);
    if (verdict !== 'apply') throw new ReportOutOfOrder(verdict);
    if (row) {
      plan.report = position;
      plan.notes.push({ kind: 'report', terminalId: row.id });
    }
  }

  recordReport(terminalId: string, position: ReportPosition): Promise<void> {
    return this.batches.write({
      keys: [`t:${terminalId}`],
      locks: { terminal: terminalId },
      lead: (query) => [query({ ...LOCK_TERMINAL, values: [terminalId] })],
      decide: ([locked]) => {
        const plan: WritePlan = { terminalId, events: [], notes: [] };
        this.takeReport(locked!.rows[0], position, plan);
        return { plan, answer: () => undefined };
      },
    });
  }

  async getTerminal(terminalId: string): Promise<TerminalRecord | undefined> {
    const { rows } = await this.pool.query<TerminalRow>({
      name: 'tps_terminal',
      text: `SELECT ${TERMINAL_COLUMNS} FROM terminals WHERE id = $1`,
      values: [terminalId],
    });
    return rows[0] ? toTerminal(rows[0]) : undefined;
  }

  async listTerminals(kind?: TerminalRecord['kind']): Promise<TerminalRecord[]> {
    const { rows } = kind
      ? await this.pool.query<TerminalRow>(
          `SELECT ${TERMINAL_COLUMNS} FROM terminals WHERE kind = $1 ORDER BY id`,
          [kind],
        )
      : await this.pool.query<TerminalRow>(`SELECT ${TERMINAL_COLUMNS} FROM terminals ORDER BY id`);
    return rows.map(toTerminal);
  }

  updateTerminalStatus(
    terminalId: string,
    readings: TerminalReadings,
    at: string,
    eventId: string,
    report?: ReportPosition,
  ): Promise<EventRecord | undefined> {
    return this.batches.write({
      keys: [`t:${terminalId}`],
      locks: { terminal: terminalId },
      lead: (query) => [query({ ...LOCK_TERMINAL, values: [terminalId] })],
      decide: ([locked]) => {
        const row: TerminalRow | undefined = locked!.rows[0];
        const plan: WritePlan = { terminalId, events: [], notes: [] };
        if (report) this.takeReport(row, report, plan);
        if (!row) return { plan, answer: () => undefined };
        const current: TerminalStatus = JSON.parse(row.status);
        const changed = Object.entries(readings).some(
          ([key, value]) => current[key as keyof TerminalStatus] !== value,
        );
        if (!changed) return { plan, answer: () => undefined };
        const status: TerminalStatus = { ...current, ...readings, updated_at: at };
        const event: NewEvent = {
          id: eventId,
          accountId: row.account_id,
          subject: terminalId,
          kind: 'TerminalStatus',
          time: at,
          data: status,
        };
        plan.status = JSON.stringify(status);
        plan.events.push(event);
        plan.notes.push(eventsNotice(plan.events));
        return { plan, answer: (position) => ({ ...event, position }) };
      },
    });
  }

  async getTransaction(
    terminalId: string,
    externalId: string,
  ): Promise<TransactionRecord | undefined> {
    const { rows } = await this.pool.query<TransactionRow>({
      name: 'tps_transaction_by_key',
      text: `SELECT ${TX_COLUMNS} FROM transactions WHERE terminal_id = $1 AND external_id = $2`,
      values: [terminalId, externalId],
    });
    return rows[0] ? toTransaction(rows[0]) : undefined;
  }

  async getTransactionById(id: string): Promise<TransactionRecord | undefined> {
    const { rows } = await this.pool.query<TransactionRow>({
      name: 'tps_transaction_by_id',
      text: `SELECT ${TX_COLUMNS} FROM transactions WHERE id = $1`,
      values: [id],
    });
    return rows[0] ? toTransaction(rows[0]) : undefined;
  }

  async listUnconfirmed(terminalId: string): Promise<TransactionRecord[]> {
    const { rows } = await this.pool.query<TransactionRow>(
      `SELECT ${TX_COLUMNS} FROM transactions WHERE terminal_id = $1 AND state IN ${UNCONFIRMED_STATES} ORDER BY id`,
      [terminalId],
    );
    return rows.map(toTransaction);
  }

  async listRefunds(originalId: string): Promise<TransactionRecord[]> {
    const { rows } = await this.pool.query<TransactionRow>(
      `SELECT ${TX_COLUMNS} FROM transactions WHERE original_id = $1 ORDER BY id`,
      [originalId],
    );
    return rows.map(toTransaction);
  }

  async listDue(until: string, limit: number): Promise<TransactionRecord[]> {
    const { rows } = await this.pool.query<TransactionRow>(
      `SELECT ${TX_COLUMNS} FROM transactions WHERE due_at IS NOT NULL AND due_at <= $1 ORDER BY due_at LIMIT $2`,
      [until, limit],
    );
    return rows.map(toTransaction);
  }

  async nextDueAt(): Promise<string | undefined> {
    const { rows } = await this.pool.query<{ due_at: string }>(
      'SELECT due_at FROM transactions WHERE due_at IS NOT NULL ORDER BY due_at LIMIT 1',
    );
    return rows[0]?.due_at;
  }

  /**
   * A write of a batch (see GroupCommit): the terminal's lock (and the original's, after
   * it); the context in one statement, after the locks, so that its snapshot shows every
   * commit that held them before; the report check; the decision; its rows.
   */
  changeTransaction<R>(key: ChangeKey, decide: Decide<R>): Promise<R> {
    const query = CONTEXT_QUERIES.get(`${Boolean(key.forCreate)}/${Boolean(key.original)}`)!;
    const values = [key.terminalId, key.externalId];
    if (key.original) values.push(key.original.terminalId, key.original.externalId);
    return this.batches.write({
      keys: [`t:${key.terminalId}`, ...(key.original ? [`t:${key.original.terminalId}`] : [])],
      locks: { terminal: key.terminalId, ...(key.original ? { original: key.original } : {}) },
      lead: (send) => [
        send({ ...LOCK_TERMINAL, values: [key.terminalId] }),
        // After the terminal, never before: locks are taken in one order everywhere.
        ...(key.original
          ? [
              send({
                ...LOCK_TRANSACTION,
                values: [key.original.terminalId, key.original.externalId],
              }),
            ]
          : []),
        send({ ...query, values }),
      ],
      decide: (results) => {
        const terminal: TerminalRow | undefined = results[0]!.rows[0];
        const row: ContextRow = results.at(-1)!.rows[0];
        const plan: WritePlan = { terminalId: key.terminalId, events: [], notes: [] };
        if (key.report) this.takeReport(terminal, key.report, plan);
        const context: ChangeContext = {
          terminalOwner: terminal?.account_id,
          current: row.current ? toTransaction(row.current) : undefined,
          active: row.active ? toTransaction(row.active) : undefined,
          unconfirmedCount: key.forCreate ? (row.unconfirmed ?? 0) : 0,
        };
        if (key.original) {
          context.original = {
            record: row.original ? toTransaction(row.original) : undefined,
            refunds: (row.refunds ?? []).map(toTransaction),
          };
        }
        const change = decide(context);
        if (change.write) {
          const { txn, version, dueAt } = change.write;
          plan.transaction = change.write;
          plan.notes.push({
            kind: 'transaction',
            terminalId: txn.terminal_id,
            externalId: txn.external_id,
            version,
            ...(dueAt ? { dueAt } : {}),
          });
        }
        if (change.commands?.length) plan.commands = change.commands;
        if (change.events?.length) {
          plan.events = change.events;
          plan.notes.push(eventsNotice(change.events));
        }
        return { plan, answer: () => change.result };
      },
    });
  }

  async queueCommand(terminalId: string, command: TerminalCommand): Promise<void> {
    await this.pool.query(
      'INSERT INTO terminal_commands (command_id, terminal_id, body, created_at) VALUES ($1, $2, $3, $4)',
      [command.command_id, terminalId, JSON.stringify(command), new Date().toISOString()],
    );
  }

  async pendingCommands(): Promise<PendingCommand[]> {
    const { rows } = await this.pool.query<{ terminal_id: string; body: string }>(
      'SELECT terminal_id, body FROM terminal_commands WHERE acked_at IS NULL ORDER BY seq',
    );
    return rows.map((row) => ({ terminalId: row.terminal_id, command: JSON.parse(row.body) }));
  }

  ackCommand(terminalId: string, commandId: string, at: string): Promise<void> {
    return this.batches.write({
      keys: [`c:${commandId}`],
      lead: (query) => [
        query({
          name: 'tps_ack_command',
          text: `UPDATE terminal_commands SET acked_at = $1 WHERE command_id = $2 AND terminal_id = $3 AND acked_at IS NULL`,
          values: [at, commandId, terminalId],
        }),
      ],
      // Tells the others only when it acknowledged a command.
      decide: ([acked]) => ({
        plan: {
          terminalId: '',
          events: [],
          notes: acked!.rowCount ? [{ kind: 'command-acked', commandId }] : [],
        },
        answer: () => undefined,
      }),
    });
  }

  async readEvents(query: EventQuery): Promise<EventRecord[]> {
    if (query.kind === null) return [];
    const { sql, values } = eventWhere(query);
    const { rows } = await this.pool.query<EventRow>(
      `SELECT position, id, account_id, subject, kind, time, data FROM events
       WHERE ${sql} ORDER BY position LIMIT $${values.length + 1}`,
      [...values, query.limit],
    );
    return rows.map(toEvent);
  }

  async countEvents(query: Omit<EventQuery, 'limit'>): Promise<number> {
    if (query.kind === null) return 0;
    const { sql, values } = eventWhere(query);
    const { rows } = await this.pool.query<{ n: number }>(
      `SELECT count(*) AS n FROM events WHERE ${sql}`,
      values,
    );
    return rows[0]?.n ?? 0;
  }

  async eventBounds(): Promise<{ latest: number; trimmedThrough: number }> {
    // The counter keeps the highest position ever given, even once it is deleted.
    const { rows } = await this.pool.query<{ latest: number; trimmed: string | null }>(
      `SELECT (SELECT last FROM event_positions) AS latest,
              (SELECT value FROM settings WHERE key = $1) AS trimmed`,
      [TRIMMED_SETTING],
    );
    return { latest: rows[0]?.latest ?? 0, trimmedThrough: Number(rows[0]?.trimmed ?? 0) };
  }

  trimEvents(olderThan: string, keepFrom: number): Promise<number> {
    return this.withClient(async (client) => {
      const [, found] = await Promise.all([
        client.query('BEGIN'),
        client.query<{ last: number | null; previous: string | null }>(
          `SELECT (SELECT max(position) FROM events WHERE time < $1 AND position < $2) AS last,
                  (SELECT value FROM settings WHERE key = $3) AS previous`,
          [olderThan, keepFrom, TRIMMED_SETTING],
        ),
      ]);
      const last = found.rows[0]?.last ?? null;
      const previous = Number(found.rows[0]?.previous ?? 0);
      if (last === null || last <= previous) {
        await client.query('COMMIT');
        return previous;
      }
      await Promise.all([
        client.query('DELETE FROM events WHERE position <= $1', [last]),
        // Only ever forward, should two processes trim at once.
        client.query(
          `INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE
           SET value = excluded.value WHERE settings.value::bigint < excluded.value::bigint`,
          [TRIMMED_SETTING, String(last)],
        ),
        client.query('COMMIT'),
      ]);
      return last;
    });
  }

  async createWebhook(webhook: WebhookRecord): Promise<void> {
    await this.pool.query('INSERT INTO webhooks (id, account_id, body) VALUES ($1, $2, $3)', [
      webhook.id,
      webhook.accountId,
      JSON.stringify(webhook),
    ]);
  }

  async getWebhook(id: string): Promise<WebhookRecord | undefined> {
    const { rows } = await this.pool.query<{ body: string }>(
      'SELECT body FROM webhooks WHERE id = $1',
      [id],
    );
    return rows[0] ? JSON.parse(rows[0].body) : undefined;
  }

  async listWebhooks(accountId?: string): Promise<WebhookRecord[]> {
    const { rows } = accountId
      ? await this.pool.query<{ body: string }>(
          'SELECT body FROM webhooks WHERE account_id = $1 ORDER BY id',
          [accountId],
        )
      : await this.pool.query<{ body: string }>('SELECT body FROM webhooks ORDER BY id');
    return rows.map((row) => JSON.parse(row.body));
  }

  updateWebhook(
    id: string,
    patch: Partial<Omit<WebhookRecord, 'id' | 'accountId'>>,
  ): Promise<void> {
    return this.withClient(async (client) => {
      const [, found] = await Promise.all([
        client.query('BEGIN'),
        client.query<{ body: string }>('SELECT body FROM webhooks WHERE id = $1 FOR UPDATE', [id]),
      ]);
      const row = found.rows[0];
      if (!row) {
        await client.query('COMMIT');
        return;
      }
      const next: Record<string, unknown> = { ...JSON.parse(row.body), ...patch };
      // An explicit undefined clears a member.
      for (const [key, value] of Object.entries(patch)) if (value === undefined) delete next[key];
      await Promise.all([
        client.query('UPDATE webhooks SET body = $1 WHERE id = $2', [JSON.stringify(next), id]),
        client.query('COMMIT'),
      ]);
    });
  }

  async deleteWebhook(id: string): Promise<void> {
    await this.pool.query('DELETE FROM webhooks WHERE id = $1', [id]);
  }

  async getSetting(key: string): Promise<string | undefined> {
    const { rows } = await this.pool.query<{ value: string }>(
      'SELECT value FROM settings WHERE key = $1',
      [key],
    );
    return rows[0]?.value;
  }

  async putSetting(key: string, value: string): Promise<void> {
    await this.pool.query(
      'INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
      [key, value],
    );
  }

  async claimSetting(key: string, value: string): Promise<string> {
    // Two statements, sent together: an insert that met another process's insert still in
    // flight waits for it, and the read after it, with a snapshot of its own, sees it.
    const [, kept] = await this.withClient((client) =>
      Promise.all([
        client.query(
          'INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING',
          [key, value],
        ),
        client.query<{ value: string }>('SELECT value FROM settings WHERE key = $1', [key]),
      ]),
    );
    return kept.rows[0]!.value;
  }

  /**
   * Calls `listener` with each change the other processes commit, from a connection of its
   * own that LISTENs (opened on the first call). Each time that connection is (re)opened,
   * listeners get `{ kind: 'resync' }`: a change may have been missed while it was not.
   */
  watch(listener: (change: StoreChange) => void): () => void {
    if (this.closed) return () => {};
    this.listeners.add(listener);
    this.changeFeed ??= new ChangeFeed(
      this.connection,
      (payload) => this.deliver(payload),
      () => this.notify({ kind: 'resync' }),
      this.logger,
    );
    return () => {
      this.listeners.delete(listener);
    };
  }

  private deliver(payload: string | undefined): void {
    let parsed: z.infer<typeof Notification> | undefined;
    try {
      const result = Notification.safeParse(JSON.parse(payload ?? ''));
      if (result.success) parsed = result.data;
    } catch {
      // not JSON: ignored below
    }
    if (!parsed) {
      this.logger.warn({ payload }, `invalid notification on ${CHANNEL} ignored`);
      return;
    }
    // Our own changes, or another relay's that keeps its tables in another schema.
    if (parsed.origin === this.origin || parsed.schema !== this.schema) return;
    this.notify(parsed.change);
  }

  private notify(change: StoreChange): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(change);
      } catch (error) {
        this.logger.warn({ err: error }, 'store change listener failed');
      }
    }
  }

  /** Sent at once, in a transaction of its own. */
  async announce(change: StoreChange): Promise<void> {
    await this.pool.query(`SELECT pg_notify('${CHANNEL}', $1)`, [this.envelope(change)]);
  }

  leadership(): Leadership {
    const leadership = new PostgresLeadership(
      this.connection,
      this.schema,
      this.options.leaderRetryMs ?? 1000,
      this.logger,
      () => this.leaderships.delete(leadership),
    );
    this.leaderships.add(leadership);
    return leadership;
  }
}

/**
 * Applies the migrations not yet applied, in one transaction under an advisory lock (the
 * schema is created under it too), and answers the schema the tables are in.
 */
async function migrate(pool: pg.Pool, schema: string | undefined): Promise<string> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`);
    if (schema !== undefined) await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at text NOT NULL)',
    );
    const { rows } = await client.query<{ version: number }>(
      'SELECT version FROM schema_migrations',
    );
    const applied = new Set(rows.map((row) => row.version));
    for (const migration of POSTGRES_MIGRATIONS) {
      if (applied.has(migration.version)) continue;
      await client.query(migration.sql);
      await client.query('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)', [
        migration.version,
        new Date().toISOString(),
      ]);
    }
    const current = await client.query<{ name: string }>('SELECT current_schema() AS name');
    await client.query('COMMIT');
    client.release();
    return current.rows[0]!.name;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    client.release(true);
    throw error;
  }
}

function eventWhere(query: Omit<EventQuery, 'limit'>): { sql: string; values: unknown[] } {
  const values: unknown[] = [query.accountId, query.after];
  const clauses = ['account_id = $1', 'position > $2'];
  if (query.subject !== undefined) clauses.push(`subject = $${values.push(query.subject)}`);
  if (query.kind !== undefined && query.kind !== null) {
    clauses.push(`kind = $${values.push(query.kind)}`);
  }
  return { sql: clauses.join(' AND '), values };
}

/** A connection of its own that LISTENs, opened again with back-off whenever it drops. */
class ChangeFeed {
  private client: pg.Client | undefined;
  private timer: NodeJS.Timeout | undefined;
  private backoff = RECONNECT_MIN_MS;
  private closed = false;

  constructor(
    private readonly connection: pg.ClientConfig,
    private readonly onPayload: (payload: string | undefined) => void,
    private readonly onListening: () => void,
    private readonly logger: Logger,
  ) {
    void this.connect();
  }

  private async connect(): Promise<void> {
    this.timer = undefined;
    if (this.closed) return;
    const client = new pg.Client({ ...this.connection, keepAlive: true });
    this.client = client;
    client.on('notification', (message) => {
      if (message.channel === CHANNEL) this.onPayload(message.payload);
    });
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
      await client.query(`LISTEN ${CHANNEL}`);
    } catch (error) {
      this.lost(client, error);
      return;
    }
    if (this.client !== client) return;
    this.backoff = RECONNECT_MIN_MS;
    this.onListening();
  }

  private lost(client: pg.Client, error?: unknown): void {
    if (this.client !== client) return;
    this.client = undefined;
    client.end().catch(() => {});
    if (this.closed) return;
    this.logger.warn(
      { err: error, retryInMs: this.backoff },
      `PostgreSQL connection listening on ${CHANNEL} lost`,
    );
    this.timer = setTimeout(() => void this.connect(), this.backoff);
    this.backoff = Math.min(this.backoff * 2, RECONNECT_MAX_MS);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => {});
  }
}

/**
 * The lead is a session advisory lock (per schema), tried on a connection of its own
 * every `retryMs` until taken. It lasts as long as that session: when the connection
 * drops, `onLose` is called and the trying starts again; when a process dies, the
 * database ends its session and another takes the lead at its next try. While leading,
 * the session is probed at the same pace: one that stops answering (the database out of
 * reach) counts as lost, rather than leaving this process to believe it still leads.
 */
class PostgresLeadership implements Leadership {
  private client: pg.Client | undefined;
  private timer: NodeJS.Timeout | undefined;
  private busy = false;
  private leading = false;
  private stopped = false;
  private onLead: () => void = () => {};
  private onLose: () => void = () => {};

  constructor(
    private readonly connection: pg.ClientConfig,
    private readonly schema: string,
    private readonly retryMs: number,
    private readonly logger: Logger,
    private readonly onStopped: () => void,
  ) {}

  start(onLead: () => void, onLose: () => void): void {
    if (this.stopped) return;
    this.onLead = onLead;
    this.onLose = onLose;
    void this.step();
  }

  private schedule(): void {
    if (this.stopped || this.busy || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.step();
    }, this.retryMs);
  }

  /** Tries to take the lock, or, leading, checks that the session still answers. */
  private async step(): Promise<void> {
    if (this.stopped || this.busy) return;
    this.busy = true;
    let tookLead = false;
    try {
      if (this.leading && this.client) await this.probe(this.client);
      else {
        const client = this.client ?? (await this.connect());
        const { rows } = await client.query<{ taken: boolean }>(
          'SELECT pg_try_advisory_lock($1, hashtext($2)) AS taken',
          [LEADER_LOCK_CLASS, this.schema],
        );
        // Stopped meanwhile: stop() ends the session, which lets the lock go.
        if (rows[0]?.taken && !this.stopped && this.client === client) {
          this.leading = tookLead = true;
        }
      }
    } catch {
      // The connection failed: lost() has dropped it; the next try opens another.
    } finally {
      this.busy = false;
    }
    if (tookLead) this.call(this.onLead);
    this.schedule();
  }

  private async probe(client: pg.Client): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = Math.max(5 * this.retryMs, 5000);
    try {
      await Promise.race([
        client.query('SELECT 1'),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer in ${timeout} ms`)), timeout);
        }),
      ]);
    } catch (error) {
      client.connection.stream.destroy();
      this.lost(client, error);
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  private async connect(): Promise<pg.Client> {
    const client = new pg.Client({ ...this.connection, keepAlive: true });
    this.client = client;
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client));
    try {
      await client.connect();
    } catch (error) {
      this.lost(client, error);
      throw error;
    }
    return client;
  }

  private lost(client: pg.Client, error?: unknown): void {
    if (this.client !== client) return;
    this.client = undefined;
    client.end().catch(() => {});
    if (this.stopped) return;
    if (this.leading) {
      this.leading = false;
      this.logger.warn({ err: error }, 'PostgreSQL leadership session lost');
      this.call(this.onLose);
    }
    this.schedule();
  }

  private call(callback: () => void): void {
    try {
      callback();
    } catch (error) {
      this.logger.warn({ err: error }, 'leadership callback failed');
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    const client = this.client;
    this.client = undefined;
    if (client) {
      if (this.leading) {
        await client
          .query('SELECT pg_advisory_unlock($1, hashtext($2))', [LEADER_LOCK_CLASS, this.schema])
          .catch(() => {});
      }
      await client.end().catch(() => {});
    }
    this.leading = false;
    this.onStopped();
  }
}
