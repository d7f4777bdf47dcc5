/** What the relay and its tests need of simulated terminals, however they run. */
import type { TerminalRecord } from '../store/records.js';

/**
 * Where a transaction stands on the simulated card reader. STOPPED: cancelled on the
 * relay's word before anything was charged; REVERSED: charged, then reversed.
 */
export type ReaderOutcome = 'RUNNING' | 'PAUSED' | 'CHARGED' | 'DECLINED' | 'STOPPED' | 'REVERSED';

export interface SimulatorFleet {
  /** Brings a simulated terminal to life (again, after a restart). */
  attach(terminal: TerminalRecord): Promise<void>;
  /** Each transaction the terminal's reader has started, and where it stands. */
  outcomes(terminalId: string): Map<string, ReaderOutcome>;
  /** Receipts printed on the terminal. */
  printed(terminalId: string): number;
  close(): Promise<void>;
}
