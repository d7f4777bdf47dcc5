/**
 * The store's terminals: each one's record and status, what its card reader can do, and
 * the position of the newest report applied from its agent (cloud/delivery/report-order.ts).
 */
import type { ReaderCapabilities, TerminalReadings } from '../../../protocol/index.js';
import type { Settlement } from '../../../protocol/settlement.js';
import type { ReportPosition } from '../../delivery/report-order.js';
import type { EventRecord, TerminalRecord } from '../records.js';

export interface TerminalStore {
  createTerminal(terminal: TerminalRecord): Promise<void>;
  /** The journal and sequence number of the newest report applied from the terminal's agent. */
  lastReport(terminalId: string): Promise<{ journal: string | undefined; seq: number }>;
  /**
   * The terminal's status and its newest report, in one read: what a heartbeat is checked
   * against on every arrival (cloud/terminals/unchanged-status.ts). Undefined: no such terminal.
   */
  statusAndLastReport(
    terminalId: string,
  ): Promise<
    | { status: TerminalReadings; lastReport: { journal: string | undefined; seq: number } }
    | undefined
  >;
  /**
   * Records a report that changes nothing else (its transaction is unknown); throws
   * ReportOutOfOrder as a change carrying the report would.
   */
  recordReport(terminalId: string, position: ReportPosition): Promise<void>;
  getTerminal(terminalId: string): Promise<TerminalRecord | undefined>;
  listTerminals(kind?: TerminalRecord['kind']): Promise<TerminalRecord[]>;
  /**
   * Merges readings into the terminal's status and, when anything changed, appends its
   * TerminalStatus event in the same commit. Answers the event, or undefined. With a
   * report position, records it in the same commit or throws ReportOutOfOrder.
   *
   * Commits across ports (the terminal's status, the event log's event, the report's
   * position) in one transaction: a status the log does not tell, or a report recorded
   * without what it said, would be lost to the webhooks or applied twice after a crash.
   */
  updateTerminalStatus(
    terminalId: string,
    readings: TerminalReadings,
    at: string,
    eventId: string,
    report?: ReportPosition,
  ): Promise<EventRecord | undefined>;

  /**
   * Appends the terminal's TerminalSettlement event (an end-of-day it ran) and, with a
   * report position, records it in the same commit or throws ReportOutOfOrder. Answers
   * the event; undefined for an unknown terminal (the report is still recorded).
   *
   * Commits across ports (the event log's event and the terminal's report position) in one
   * transaction, so that an end-of-day reported again after a crash is told once.
   */
  appendSettlement(
    terminalId: string,
    settlement: Settlement,
    eventId: string,
    report?: ReportPosition,
  ): Promise<EventRecord | undefined>;

  /**
   * Keeps what the terminal's card reader can do, as its agent says with its presence;
   * undefined forgets it (an agent that does not say: the native reader). Other
   * capabilities are left as they are; an unknown terminal is left alone.
   */
  setReaderCapabilities(terminalId: string, reader: ReaderCapabilities | undefined): Promise<void>;
}
