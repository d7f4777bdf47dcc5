/**
 * The PostgreSQL store's terminals (ports/terminals.ts): reads and plain writes on the
 * pool; the writes that decide on what they read (a status, a report, an end-of-day)
 * commit in groups (group-commit.ts, writes.ts).
 */
import type pg from 'pg';
import type { ReaderCapabilities, TerminalReadings } from '../../../protocol/index.js';
import type { Settlement } from '../../../protocol/settlement.js';
import type { ReportPosition } from '../../delivery/report-order.js';
import type { TerminalStore } from '../ports/terminals.js';
import type { EventRecord, TerminalRecord } from '../records.js';
import { insertTerminalSql, terminalValues, toTerminal } from '../rows.js';
import type { GroupCommit } from './group-commit.js';
import { TERMINAL_COLUMNS, lastReportOf, type TerminalRow } from './statements.js';
import { reportWrite, settlementWrite, statusWrite } from './writes.js';

export function postgresTerminals(pool: pg.Pool, batches: GroupCommit): TerminalStore {
  return {
    async createTerminal(t: TerminalRecord): Promise<void> {
      await pool.query(
        insertTerminalSql((n) => `$${n}`),
        terminalValues(t),
      );
    },

    async lastReport(terminalId: string): Promise<{ journal: string | undefined; seq: number }> {
      const { rows } = await pool.query<TerminalRow>(
        'SELECT last_report_journal, last_report_seq FROM terminals WHERE id = $1',
        [terminalId],
      );
      return lastReportOf(rows[0]);
    },

    async statusAndLastReport(terminalId: string) {
      const { rows } = await pool.query<TerminalRow>({
        name: 'tps_status_and_last_report',
        text: 'SELECT status, last_report_journal, last_report_seq FROM terminals WHERE id = $1',
        values: [terminalId],
      });
      const row = rows[0];
      if (!row) return undefined;
      return { status: JSON.parse(row.status) as TerminalReadings, lastReport: lastReportOf(row) };
    },

    recordReport(terminalId: string, position: ReportPosition): Promise<void> {
      return batches.write(reportWrite(terminalId, position));
    },

    async getTerminal(terminalId: string): Promise<TerminalRecord | undefined> {
      const { rows } = await pool.query<TerminalRow>({
        name: 'tps_terminal',
        text: `SELECT ${TERMINAL_COLUMNS} FROM terminals WHERE id = $1`,
        values: [terminalId],
      });
      return rows[0] ? toTerminal(rows[0]) : undefined;
    },

    async listTerminals(kind?: TerminalRecord['kind']): Promise<TerminalRecord[]> {
      const { rows } = kind
        ? await pool.query<TerminalRow>(
            `SELECT ${TERMINAL_COLUMNS} FROM terminals WHERE kind = $1 ORDER BY id`,
            [kind],
          )
        : await pool.query<TerminalRow>(`SELECT ${TERMINAL_COLUMNS} FROM terminals ORDER BY id`);
      return rows.map(toTerminal);
    },

    updateTerminalStatus(
      terminalId: string,
      readings: TerminalReadings,
      at: string,
      eventId: string,
      report?: ReportPosition,
    ): Promise<EventRecord | undefined> {
      return batches.write(statusWrite(terminalId, readings, at, eventId, report));
    },

    appendSettlement(
      terminalId: string,
      settlement: Settlement,
      eventId: string,
      report?: ReportPosition,
    ): Promise<EventRecord | undefined> {
      return batches.write(settlementWrite(terminalId, settlement, eventId, report));
    },

    async setReaderCapabilities(terminalId: string, reader: ReaderCapabilities | undefined) {
      // jsonb_set / `-` keep the other capabilities as they are.
      await pool.query(
        reader
          ? `UPDATE terminals SET capabilities = jsonb_set(capabilities::jsonb, '{reader}', $2::jsonb)::text WHERE id = $1`
          : `UPDATE terminals SET capabilities = (capabilities::jsonb - 'reader')::text WHERE id = $1`,
        reader ? [terminalId, JSON.stringify(reader)] : [terminalId],
      );
    },
  };
}
