/**
 * The PostgreSQL store's statements: the rows it reads (and the locks it takes with them),
 * what a decision sees, and what a batch of writes sends (its rows, its events and
 * notifications, its first locks). Each variant of a statement is a named, prepared one.
 */
import type pg from 'pg';
import type { TerminalCommand } from '../../../protocol/index.js';
import type { ChangeNotice } from '../../cluster/change-bus.js';
import type { EventQuery, NewEvent, TransactionRecord } from '../records.js';
import {
  ACTIVE_STATES,
  UNCONFIRMED_STATES,
  type TransactionRow,
  type TerminalRow as BaseTerminalRow,
} from '../rows.js';
import type { ReportPosition } from '../../delivery/report-order.js';
import { CHANNEL } from './change-bus.js';

/** A terminal row with the newest report applied from its agent. */
export interface TerminalRow extends BaseTerminalRow {
  last_report_journal: string | null;
  last_report_seq: number;
}

export const lastReportOf = (row: TerminalRow | undefined) => ({
  journal: row?.last_report_journal ?? undefined,
  seq: row?.last_report_seq ?? 0,
});

export const TX_COLUMNS = 'id, account_id, original_id, due_at, version, body';
export const TERMINAL_COLUMNS =
  'id, account_id, kind, capabilities, status, created_at, name, cohort, last_report_journal, last_report_seq';

export const LOCK_TERMINAL = {
  name: 'tps_lock_terminal',
  text: `SELECT ${TERMINAL_COLUMNS} FROM terminals WHERE id = $1 FOR UPDATE`,
};
export const LOCK_TRANSACTION = {
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
export const CONTEXT_QUERIES = new Map(
  [false, true].flatMap((forCreate) =>
    [false, true].map((original) => [
      `${forCreate}/${original}`,
      contextQuery(forCreate, original),
    ]),
  ),
);

export interface ContextRow {
  current: TransactionRow | null;
  active?: TransactionRow | null;
  unconfirmed?: number;
  original?: TransactionRow | null;
  refunds?: TransactionRow[];
}

/** What one write of a batch changes in its rows, and what it adds to the batch's last step. */
export interface WritePlan {
  terminalId: string;
  /** The terminal's new status (JSON). */
  status?: string;
  report?: ReportPosition;
  transaction?: TransactionRecord;
  commands?: TerminalCommand[];
  events: NewEvent[];
  notes: ChangeNotice[];
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
export function rowsQuery(plan: WritePlan): pg.QueryConfig | undefined {
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
      `txn AS (INSERT INTO transactions (id, terminal_id, external_id, account_id, state, original_id, due_at, version, created_at, body)
        VALUES (${[
          $(txn.id),
          $(txn.terminal_id),
          $(txn.external_id),
          $(accountId),
          $(txn.state),
          $(originalId ?? null),
          $(dueAt ?? null),
          $(version, '::integer'),
          $(txn.created_at),
          $(JSON.stringify(txn)),
        ].join(', ')})
        ON CONFLICT (id) DO UPDATE SET state = excluded.state, due_at = excluded.due_at,
          version = excluded.version, created_at = excluded.created_at, body = excluded.body)`,
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
export function logQuery(events: NewEvent[], notes: string[]): pg.QueryConfig | undefined {
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
 * A batch's first locks: all its terminals, then all the original purchases its refunds
 * lock, each set in one statement that takes them in the order of their ids. Every batch
 * taking them so, two batches (of this process or another) never wait for each other's
 * terminals in a circle, as they could if each took them step by step. A write still
 * takes its own locks again in its step (at once: they are held), for what they answer.
 */
export function upfrontLocks(
  writes: Array<{
    locks?: { terminal: string; original?: { terminalId: string; externalId: string } };
  }>,
): pg.QueryConfig[] {
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

/** The conditions of an event query, with their values. */
export function eventWhere(query: Omit<EventQuery, 'limit'>): { sql: string; values: unknown[] } {
  const values: unknown[] = [query.accountId, query.after];
  const clauses = ['account_id = $1', 'position > $2'];
  if (query.subject !== undefined) clauses.push(`subject = $${values.push(query.subject)}`);
  if (query.kind !== undefined && query.kind !== null) {
    clauses.push(`kind = $${values.push(query.kind)}`);
  }
  return { sql: clauses.join(' AND '), values };
}
