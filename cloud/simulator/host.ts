/**
 * Simulated terminals hosted inside the relay, reached through the same TerminalLink
 * interface as real ones.
 */
import type { Logger } from 'pino';
import type { TerminalCommand, TerminalReport } from '../../protocol/index.js';
import type { Clock } from '../clock.js';
import type { TerminalRecord } from '../store/records.js';
import type { ReportHandler, TerminalLink } from '../terminals/link.js';
import type { ReaderOutcome, SimulatorFleet } from './fleet.js';
import { SimulatedTerminal } from './simulated-terminal.js';

export interface SimulatorHostOptions {
  delayMs: number;
  clock: Clock;
  logger: Logger;
}

/**
 * Simulated terminals played inside the relay, without the agent path: for comparing
 * the two paths and for a relay without MQTT (TPS_SIMULATOR_MODE=in-process).
 */
export class SimulatorHost implements TerminalLink, SimulatorFleet {
  private readonly terminals = new Map<string, SimulatedTerminal>();
  private handler: ReportHandler = async () => {};
  /** Reports of one terminal are handled one after another, in the order they were made. */
  private readonly queues = new Map<string, Promise<void>>();

  constructor(private readonly options: SimulatorHostOptions) {}

  async attach(terminal: TerminalRecord): Promise<void> {
    if (this.terminals.has(terminal.id)) return;
    this.terminals.set(
      terminal.id,
      new SimulatedTerminal({
        terminalId: terminal.id,
        delayMs: this.options.delayMs,
        clock: this.options.clock,
        logger: this.options.logger.child({ terminalId: terminal.id }),
        report: (report) => this.deliver(terminal.id, report),
      }),
    );
  }

  outcomes(terminalId: string): Map<string, ReaderOutcome> {
    return this.terminals.get(terminalId)?.outcomes() ?? new Map();
  }

  printed(terminalId: string): number {
    return this.terminals.get(terminalId)?.printed.length ?? 0;
  }

  async send(terminalId: string, command: TerminalCommand): Promise<void> {
    const terminal = this.terminals.get(terminalId);
    if (!terminal) throw new Error(`no simulated terminal ${terminalId}`);
    await terminal.handle(command);
  }

  onReport(handler: ReportHandler): void {
    this.handler = handler;
  }

  private deliver(terminalId: string, report: TerminalReport): Promise<void> {
    const previous = this.queues.get(terminalId) ?? Promise.resolve();
    const next = previous.then(() => this.handler(terminalId, report));
    const settled = next.catch((error: unknown) => {
      this.options.logger.error({ err: error, terminalId }, 'report not handled');
    });
    this.queues.set(terminalId, settled);
    return settled;
  }

  async close(): Promise<void> {
    for (const terminal of this.terminals.values()) terminal.close();
    await Promise.all(this.queues.values());
  }
}
