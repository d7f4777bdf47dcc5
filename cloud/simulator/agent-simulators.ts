/**
 * Simulated terminals on the real path: each one is a terminal agent (agent/) with the
 * emulated card-reader firmware and an emulated receipt printer on in-memory serial
 * lines, signed in to the broker with its own credential, exactly like a terminal in the
 * field. Its journal and the reader's memory live under `<data dir>/simulators/<id>/`, so
 * a simulated terminal recovers from a relay crash the way a real one recovers from its
 * own.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { AgentConfigSchema } from '../../agent/config.js';
import { startAgent, type RunningAgent } from '../../agent/agent.js';
import { emulatedReader, type EmulatedReader } from '../../agent/emulated-reader.js';
import { DriverPrinter } from '../../agent/printer-adapter.js';
import { FileReaderMemory } from '../../firmware-bridge/emulator/file-reader-memory.js';
import { EmulatedPrinter } from '../../firmware-bridge/printer/emulated-printer.js';
import { createStreamPair } from '../../firmware-bridge/serial/stream-pair.js';
import type { Clock } from '../../common/clock.js';
import type { TerminalRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import type { ReaderOutcome, SimulatorFleet } from './fleet.js';
import { partLogger } from '../../common/logging.js';
import { SimulatorSecrets } from './simulator-secret.js';

export interface AgentSimulatorsOptions {
  store: Store;
  /** The broker the simulated agents sign in to. */
  brokerUrl: string;
  /**
   * A connection to the relay's own broker inside the process, instead of one to
   * `brokerUrl`: used when that broker listens with TLS, whose certificate names the
   * relay's public host, which the simulators do not dial.
   */
  connectInProcess?: () => Duplex;
  dataDir: string;
  delayMs: number;
  clock: Clock;
  logger: Logger;
}

interface Running {
  agent: RunningAgent;
  memory: FileReaderMemory;
  reader: EmulatedReader;
  printer: EmulatedPrinter;
  driverPrinter: DriverPrinter;
}

/** Receipt printers of simulated terminals are 58 mm ones. */
const HEAD_WIDTH = 384;

export class AgentSimulators implements SimulatorFleet {
  private readonly running = new Map<string, Running>();
  private readonly starting = new Map<string, Promise<void>>();
  private readonly secrets: SimulatorSecrets;

  constructor(private readonly options: AgentSimulatorsOptions) {
    this.secrets = new SimulatorSecrets(options.store);
  }

  attach(terminal: TerminalRecord): Promise<void> {
    if (this.running.has(terminal.id)) return Promise.resolve();
    let started = this.starting.get(terminal.id);
    if (!started) {
      started = this.start(terminal).finally(() => this.starting.delete(terminal.id));
      this.starting.set(terminal.id, started);
    }
    return started;
  }

  private async start(terminal: TerminalRecord): Promise<void> {
    const { brokerUrl, dataDir, delayMs, clock } = this.options;
    const logger = this.options.logger.child({ terminalId: terminal.id });
    const dir = path.join(dataDir, 'simulators', terminal.id);
    fs.mkdirSync(dir, { recursive: true });
    // The same secret on every relay of the store: an external broker knows it already.
    const secret = await this.secrets.issue(terminal.id, clock.now());
    const stateFile = path.join(dir, 'reader.jsonl');
    const memory = new FileReaderMemory(stateFile);
    const reader = emulatedReader({
      memory,
      delayMs,
      serial: Number(terminal.id.replace(/\D/g, '').slice(-8) || '1'),
      battery: { percentage: 100, pluggedIn: true },
      now: () => clock.now(),
      logger: partLogger(logger, 'reader'),
    });
    const printer = new EmulatedPrinter();
    const driverPrinter = new DriverPrinter(
      async () => {
        const line = createStreamPair();
        printer.attach(line.b);
        return { stream: line.a, close: async () => void line.a.destroy() };
      },
      { headWidth: HEAD_WIDTH, keepOpen: true },
    );
    const config = AgentConfigSchema.parse({
      terminal_id: terminal.id,
      broker: { url: brokerUrl, username: terminal.id, password: secret },
      reader: { emulated: { state_file: stateFile, delay_ms: delayMs } },
      printer: { type: 'none' },
      data_dir: dir,
      heartbeat_s: 300,
    });
    const agent = await startAgent(config, {
      reader: reader.reader,
      printer: driverPrinter,
      logger: partLogger(logger, 'agent'),
      clock,
      ...(this.options.connectInProcess ? { openBrokerStream: this.options.connectInProcess } : {}),
      // The broker is on the same machine: come back at once after a relay restart.
      tuning: { reconnect: { initialMs: 50, maxMs: 2000 } },
    });
    this.running.set(terminal.id, { agent, memory, reader, printer, driverPrinter });
    // A simulator handed out should take a payment at once: wait (briefly) for its link.
    const deadline = Date.now() + 5000;
    while (!agent.link.connected && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  outcomes(terminalId: string): Map<string, ReaderOutcome> {
    const records = this.running.get(terminalId)?.memory.all() ?? [];
    return new Map(
      records
        .filter((r) => r.sequence > 0)
        .map((r): [string, ReaderOutcome] => [r.transaction_id, outcomeOf(r.phase, r.result_code)]),
    );
  }

  printed(terminalId: string): number {
    return this.running.get(terminalId)?.printer.jobs.length ?? 0;
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.starting.values()]);
    await Promise.all(
      [...this.running.values()].map(async ({ agent, reader, driverPrinter }) => {
        await agent.stop();
        await driverPrinter.close();
        await reader.close();
      }),
    );
    this.running.clear();
  }
}

function outcomeOf(phase: string, resultCode: string | undefined): ReaderOutcome {
  switch (phase) {
    case 'IN_PROGRESS':
      return 'RUNNING';
    case 'CUSTOMER_IDENTIFIED':
      return 'PAUSED';
    case 'COMPLETED':
      return resultCode === 'SUCCESS' ? 'CHARGED' : 'DECLINED';
    default:
      return resultCode === 'REVERSED' ? 'REVERSED' : 'STOPPED';
  }
}
