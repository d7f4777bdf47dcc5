/**
 * Simulated terminals hosted inside the relay, reached through the same TerminalLink
 * interface as real ones, beneath the same outbox and inbox.
 */
import type { Logger } from 'pino';
import type { TerminalCommand } from '../../protocol/index.js';
import type { Clock } from '../../common/clock.js';
import type { TerminalRecord } from '../store/records.js';
import type { LinkEvents, TerminalLink } from '../terminals/link.js';
import type { ReaderOutcome, SimulatorFleet } from './fleet.js';
import { SimulatedTerminal } from './simulated-terminal.js';

export interface SimulatorHostOptions {
  delayMs: number;
  clock: Clock;
  logger: Logger;
}

/**
 * Simulated terminals played inside the relay, without the agent path: for comparing
 * the two paths and for a relay without MQTT (TPS_SIMULATOR_MODE=in-process). A command
 * is acknowledged when the simulated terminal says so; its reports carry no position (it
 * keeps no journal), and the inbox applies them in the order they were made.
 */
export class SimulatorHost implements TerminalLink, SimulatorFleet {
  private readonly terminals = new Map<string, SimulatedTerminal>();
  private events: LinkEvents | undefined;

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
        report: async (report) => this.events?.report(terminal.id, report),
      }),
    );
  }

  outcomes(terminalId: string): Map<string, ReaderOutcome> {
    return this.terminals.get(terminalId)?.outcomes() ?? new Map();
  }

  printed(terminalId: string): number {
    return this.terminals.get(terminalId)?.printed.length ?? 0;
  }

  listen(events: LinkEvents): void {
    this.events = events;
  }

  async publish(terminalId: string, command: TerminalCommand): Promise<void> {
    const terminal = this.terminals.get(terminalId);
    if (!terminal) throw new Error(`no simulated terminal ${terminalId}`);
    terminal.handle(command).then(
      () => this.events?.commandAcked(terminalId, command.command_id),
      (error: unknown) => this.options.logger.error({ err: error, terminalId }, 'command failed'),
    );
  }

  async close(): Promise<void> {
    for (const terminal of this.terminals.values()) terminal.close();
  }
}
