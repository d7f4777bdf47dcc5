/**
 * The SQLite store's terminals (ports/terminals.ts): the writes run in the writer's shared
 * commit (sqlite-writes.ts), the reads on the relay thread's connection.
 */
import type Database from 'better-sqlite3';
import type { ReaderCapabilities, TerminalReadings, TerminalStatus } from '../../protocol/index.js';
import type { Settlement } from '../../protocol/settlement.js';
import type { ReportPosition } from '../delivery/report-order.js';
import type { TerminalStore } from './ports/terminals.js';
import {
  settlementEvent,
  type EventRecord,
  type NewEvent,
  type TerminalRecord,
} from './records.js';
import { insertTerminalSql, terminalValues, toTerminal, type TerminalRow } from './rows.js';
import {
  SHARED_SQL,
  toEventWrite,
  toLastReport,
  type LastReportRow,
  type QueuesWrites,
  type WriteSteps,
} from './sqlite-write-steps.js';

/** The writes, as operations the writer thread runs. */
export function terminalWrites(db: Database.Database, steps: WriteSteps) {
  const s = {
    terminalStatus: db.prepare<[string], { account_id: string; status: string }>(
      'SELECT account_id, status FROM terminals WHERE id = ?',
    ),
    updateTerminalStatus: db.prepare<[string, string]>(
      'UPDATE terminals SET status = ? WHERE id = ?',
    ),
  };

  return {
    updateTerminalStatus(a: {
      terminalId: string;
      readings: TerminalReadings;
      at: string;
      eventId: string;
      report?: ReportPosition;
    }): EventRecord | undefined {
      if (a.report) steps.takeReport(a.terminalId, a.report);
      const row = s.terminalStatus.get(a.terminalId);
      if (!row) return undefined;
      const current: TerminalStatus = JSON.parse(row.status);
      const changed = Object.entries(a.readings).some(
        ([key, value]) => current[key as keyof TerminalStatus] !== value,
      );
      if (!changed) return undefined;
      const status: TerminalStatus = { ...current, ...a.readings, updated_at: a.at };
      s.updateTerminalStatus.run(JSON.stringify(status), a.terminalId);
      const event: NewEvent = {
        id: a.eventId,
        accountId: row.account_id,
        subject: a.terminalId,
        kind: 'TerminalStatus',
        time: a.at,
        data: status,
      };
      return { ...event, position: steps.appendEvent(toEventWrite(event)) };
    },

    appendSettlement(a: {
      terminalId: string;
      settlement: Settlement;
      eventId: string;
      report?: ReportPosition;
    }): EventRecord | undefined {
      if (a.report) steps.takeReport(a.terminalId, a.report);
      const row = s.terminalStatus.get(a.terminalId);
      if (!row) return undefined;
      const event = settlementEvent(a.terminalId, row.account_id, a.settlement, a.eventId);
      return { ...event, position: steps.appendEvent(toEventWrite(event)) };
    },

    setReaderCapabilities(a: { terminalId: string; reader?: ReaderCapabilities }): void {
      // json_set/json_remove keep the other capabilities as they are.
      if (a.reader) {
        db.prepare(
          "UPDATE terminals SET capabilities = json_set(capabilities, '$.reader', json(?)) WHERE id = ?",
        ).run(JSON.stringify(a.reader), a.terminalId);
      } else {
        db.prepare(
          "UPDATE terminals SET capabilities = json_remove(capabilities, '$.reader') WHERE id = ?",
        ).run(a.terminalId);
      }
    },

    recordReport(a: { terminalId: string; position: ReportPosition }): void {
      steps.takeReport(a.terminalId, a.position);
    },

    createTerminal(t: TerminalRecord): void {
      db.prepare(insertTerminalSql(() => '?')).run(terminalValues(t));
    },
  };
}

type TerminalWrites = ReturnType<typeof terminalWrites>;

/** The statements the port reads with (the query plans are tested, sqlite.test.ts). */
export function terminalStatements(db: Database.Database) {
  return {
    terminal: db.prepare<[string], TerminalRow>('SELECT * FROM terminals WHERE id = ?'),
    lastReport: db.prepare<[string], LastReportRow>(SHARED_SQL.lastReport),
    statusAndLastReport: db.prepare<[string], LastReportRow & { status: string }>(
      'SELECT status, last_report_journal AS journal, last_report_seq AS seq FROM terminals WHERE id = ?',
    ),
  };
}

/** The port, its reads here and its writes queued to the writer. */
export function sqliteTerminals(
  db: Database.Database,
  writer: QueuesWrites<TerminalWrites>,
): TerminalStore {
  const { terminal, lastReport, statusAndLastReport } = terminalStatements(db);
  return {
    createTerminal: (record) => writer.write({ op: 'createTerminal', arg: record }),

    async lastReport(terminalId) {
      return toLastReport(lastReport.get(terminalId));
    },

    async statusAndLastReport(terminalId) {
      const row = statusAndLastReport.get(terminalId);
      if (!row) return undefined;
      return { status: JSON.parse(row.status) as TerminalReadings, lastReport: toLastReport(row) };
    },

    recordReport: (terminalId, position) =>
      writer.write({ op: 'recordReport', arg: { terminalId, position } }),

    async getTerminal(terminalId) {
      const row = terminal.get(terminalId);
      return row ? toTerminal(row) : undefined;
    },

    async listTerminals(kind) {
      const rows = kind
        ? db
            .prepare<[string], TerminalRow>('SELECT * FROM terminals WHERE kind = ? ORDER BY id')
            .all(kind)
        : db.prepare<[], TerminalRow>('SELECT * FROM terminals ORDER BY id').all();
      return rows.map(toTerminal);
    },

    updateTerminalStatus: (terminalId, readings, at, eventId, report) =>
      writer.write({
        op: 'updateTerminalStatus',
        arg: { terminalId, readings, at, eventId, ...(report ? { report } : {}) },
      }),

    appendSettlement: (terminalId, settlement, eventId, report) =>
      writer.write({
        op: 'appendSettlement',
        arg: { terminalId, settlement, eventId, ...(report ? { report } : {}) },
      }),

    setReaderCapabilities: (terminalId, reader) =>
      writer.write({
        op: 'setReaderCapabilities',
        arg: { terminalId, ...(reader ? { reader } : {}) },
      }),
  };
}
