/**
 * What the SQLite store's writes of several ports share: the data a write carries across
 * to the writer thread (sqlite-writer.ts), and the steps that a write of one port takes on
 * another's tables inside its commit (a report's position, an event, a command, a
 * setting). Each port's writes are in sqlite-<port>.ts; sqlite-writes.ts puts them together.
 */
import type Database from 'better-sqlite3';
import type { TerminalCommand } from '../../protocol/index.js';
import type { NewEvent, TransactionRecord } from './records.js';
import { IN_UNCONFIRMED_INDEX } from './rows.js';
import { ReportOutOfOrder, checkReport, type ReportPosition } from '../delivery/report-order.js';
import type { ChangeKey } from './store.js';

/**
 * What a change's decision saw, in the terms the writer can check again inside its
 * commit: when any of it moved since, the decision is stale (WriteConflict).
 */
export interface DecidedOn {
  currentVersion: number | null;
  /** forCreate: the id of the terminal's active transaction, and its unconfirmed count. */
  activeId?: string | null;
  unconfirmedCount?: number;
  /** A referenced refund: the original's version and its refunds' `id:version` list. */
  originalVersion?: number | null;
  refunds?: string;
}

/** A transaction row as written, its body already JSON (made on the relay thread). */
export interface TransactionWrite {
  id: string;
  terminal_id: string;
  external_id: string;
  account_id: string;
  state: string;
  original_id: string | null;
  due_at: string | null;
  version: number;
  created_at: string;
  body: string;
}

/** An event or command with its JSON already made: strings cross threads cheaply. */
export type EventWrite = Omit<NewEvent, 'data'> & { data: string };
export interface CommandWrite {
  commandId: string;
  body: string;
}

/** A decided change, ready to write (see SqliteStore.changeTransaction). */
export interface DecidedChange {
  key: ChangeKey;
  decidedOn: DecidedOn;
  write?: TransactionWrite;
  commands: CommandWrite[];
  events: EventWrite[];
}

export function toTransactionWrite(record: TransactionRecord): TransactionWrite {
  const { txn } = record;
  return {
    id: txn.id,
    terminal_id: txn.terminal_id,
    external_id: txn.external_id,
    account_id: record.accountId,
    state: txn.state,
    original_id: record.originalId ?? null,
    due_at: record.dueAt ?? null,
    version: record.version,
    created_at: txn.created_at,
    body: JSON.stringify(txn),
  };
}

export const toEventWrite = (event: NewEvent): EventWrite => ({
  ...event,
  data: JSON.stringify(event.data),
});

export const toCommandWrite = (command: TerminalCommand): CommandWrite => ({
  commandId: command.command_id,
  body: JSON.stringify(command),
});

/** Statements that the relay thread's reads and the writes both run. */
export const SHARED_SQL = {
  lastReport:
    'SELECT last_report_journal AS journal, last_report_seq AS seq FROM terminals WHERE id = ?',
  unconfirmedCount: `SELECT count(*) AS n FROM transactions WHERE terminal_id = ? AND ${IN_UNCONFIRMED_INDEX}`,
};
export type LastReportRow = { journal: string | null; seq: number };
export const toLastReport = (row: LastReportRow | undefined) => ({
  journal: row?.journal ?? undefined,
  seq: row?.seq ?? 0,
});

/** The refunds of a purchase as a decision saw them, in a form compared in the commit. */
export const refundsSeen = (refunds: Array<{ id: string; version: number }>) =>
  refunds.map((r) => `${r.id}:${r.version}`).join(',');

/** The decision of a change was taken on a state that has moved since: decide again. */
export class WriteConflict extends Error {
  constructor() {
    super('the transaction changed while its change was decided');
  }
}

/** The steps a write takes on tables of other ports, inside the writer's shared commit. */
export function writeSteps(db: Database.Database) {
  const s = {
    insertCommand: db.prepare<[string, string, string, string]>(
      'INSERT INTO terminal_commands (command_id, terminal_id, body, created_at) VALUES (?, ?, ?, ?)',
    ),
    insertEvent: db.prepare<[string, string, string, string, string, string]>(
      'INSERT INTO events (id, account_id, subject, kind, time, data) VALUES (?, ?, ?, ?, ?, ?)',
    ),
    lastReport: db.prepare<[string], LastReportRow>(SHARED_SQL.lastReport),
    setLastReport: db.prepare<[string, number, string]>(
      'UPDATE terminals SET last_report_journal = ?, last_report_seq = ? WHERE id = ?',
    ),
    setting: db.prepare<[string], { value: string }>('SELECT value FROM settings WHERE key = ?'),
    putSetting: db.prepare<[string, string]>(
      'INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
    ),
  };
  return {
    /**
     * Records the report as applied, or throws ReportOutOfOrder. Like every refusal of a
     * write here, it is thrown before the write has changed anything (see the writer).
     */
    takeReport(terminalId: string, position: ReportPosition, before?: () => void): void {
      const verdict = checkReport(toLastReport(s.lastReport.get(terminalId)), position);
      if (verdict !== 'apply') throw new ReportOutOfOrder(verdict);
      before?.();
      s.setLastReport.run(position.journal, position.seq, terminalId);
    },

    /** Appends the event and answers its position. */
    appendEvent(event: EventWrite): number {
      const { lastInsertRowid } = s.insertEvent.run(
        event.id,
        event.accountId,
        event.subject,
        event.kind,
        event.time,
        event.data,
      );
      return Number(lastInsertRowid);
    },

    insertCommand(terminalId: string, command: CommandWrite, at: string): void {
      s.insertCommand.run(command.commandId, terminalId, command.body, at);
    },

    setting(key: string): string | undefined {
      return s.setting.get(key)?.value;
    },

    putSetting(key: string, value: string): void {
      s.putSetting.run(key, value);
    },
  };
}

export type WriteSteps = ReturnType<typeof writeSteps>;

/** One write of a port's writes `W` as data: the operation's name and its argument. */
export type OpOf<W> = {
  [K in keyof W]: W[K] extends (arg: infer A) => unknown ? { op: K; arg: A } : never;
}[keyof W];

/** What a write of `W` named K answers. */
export type ResultOf<W, K extends keyof W> = W[K] extends (arg: never) => infer R ? R : never;

/** The writer (sqlite-writer.ts) as a port sees it: it queues the port's writes `W`. */
export interface QueuesWrites<W> {
  write<K extends keyof W>(op: Extract<OpOf<W>, { op: K }>): Promise<ResultOf<W, K>>;
}
