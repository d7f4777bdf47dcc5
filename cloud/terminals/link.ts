/**
 * How the relay reaches terminals, whatever carries the messages. Kept narrow so that
 * an in-process simulator and the MQTT link to real agents are interchangeable.
 */
import type { TerminalCommand, TerminalReport } from '../../protocol/index.js';
import type { ReportPosition } from '../store/store.js';

/**
 * Applies a report. With its position in the agent's outbox, the store applies it once
 * and in order, or the handler throws ReportOutOfOrder.
 */
export type ReportHandler = (
  terminalId: string,
  report: TerminalReport,
  position?: ReportPosition,
) => Promise<void>;

export interface TerminalLink {
  /**
   * Hands a command to the terminal. Resolves once the terminal has acknowledged it,
   * that is, once it will act on it even across its own restart; until then the relay
   * keeps the command and sends it again after a restart of its own.
   */
  send(terminalId: string, command: TerminalCommand): Promise<void>;
  /** Where reports from terminals go; called in order per terminal. */
  onReport(handler: ReportHandler): void;
  close(): Promise<void>;
}
