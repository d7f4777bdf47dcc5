/**
 * Simulated terminals on the real path: each one is a terminal agent (agent/) with the
 * emulated card-reader firmware (or, for one created with `reader_protocol: zvt`, the ZVT
 * driver and the emulated ZVT terminal) and an emulated receipt printer on in-memory
 * serial lines, signed in to the broker with its own credential, exactly like a terminal
 * in the field. Its journal and the reader's memory live under
 * `<data dir>/simulators/<id>/`, so a simulated terminal recovers from a relay crash the
 * way a real one recovers from its own. Unlike a real terminal's, they are not flushed to
 * the disk at every commit: they outlive a crash of the relay, not of the machine
 * (docs/simulator.md), so that a load test finds the relay's limits, not the disk's.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { AgentConfigSchema } from '../../agent/config.js';
import { startAgent, type RunningAgent } from '../../agent/agent.js';
import { emulatedReader } from '../../agent/emulated-reader.js';
import type { ReaderPort } from '../../agent/ports.js';
import { emulatedZvtReader, zvtEndOfDay, zvtStateFile } from '../../agent/zvt-reader.js';
import type { ZvtSettlement } from '../../firmware-bridge/zvt/reader/settlement.js';
import { parseStateFile } from '../../firmware-bridge/zvt/reader/driver-state.js';
import {
  NATIVE_READER_CAPABILITIES,
  type ReaderCapabilities,
} from '../../protocol/reader-capabilities.js';
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
   * A connection to the relay's own (embedded) broker inside the process, instead of one
   * to `brokerUrl`: no socket to write and read on both ends, and no TLS certificate to
   * match (it names the relay's public host, which the simulators do not dial).
   */
  connectInProcess?: () => Duplex;
  dataDir: string;
  delayMs: number;
  clock: Clock;
  logger: Logger;
}

interface Running {
  agent: RunningAgent;
  outcomes(): Map<string, ReaderOutcome>;
  reader: { close(): Promise<void> };
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
    const serial = Number(terminal.id.replace(/\D/g, '').slice(-8) || '1');
    const zvt = terminal.capabilities.reader?.protocol === 'zvt';
    const simulated = zvt
      ? zvtSimulator(dir, serial, delayMs, clock, logger)
      : nativeSimulator(dir, serial, delayMs, clock, logger);
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
      reader: {
        protocol: zvt ? 'zvt' : 'native',
        emulated: { state_file: simulated.stateFile, delay_ms: delayMs },
      },
      printer: { type: 'none' },
      data_dir: dir,
      heartbeat_s: 300,
    });
    const agent = await startAgent(config, {
      reader: simulated.reader,
      readerCapabilities: simulated.capabilities,
      printer: driverPrinter,
      logger: partLogger(logger, 'agent'),
      clock,
      journalDurability: 'process-crash',
      ...(simulated.endOfDay ? { endOfDay: { run: simulated.endOfDay } } : {}),
      ...(this.options.connectInProcess ? { openBrokerStream: this.options.connectInProcess } : {}),
      // The broker is on the same machine: come back at once after a relay restart.
      tuning: { reconnect: { initialMs: 50, maxMs: 2000 } },
    });
    this.running.set(terminal.id, {
      agent,
      outcomes: simulated.outcomes,
      reader: simulated,
      printer,
      driverPrinter,
    });
    // A simulator handed out should take a payment at once: wait (briefly) for its link.
    const deadline = Date.now() + 5000;
    while (!agent.link.connected && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  outcomes(terminalId: string): Map<string, ReaderOutcome> {
    return this.running.get(terminalId)?.outcomes() ?? new Map();
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

interface SimulatedReader {
  reader: ReaderPort;
  capabilities: ReaderCapabilities;
  /** The emulated reader's memory file. */
  stateFile: string;
  outcomes(): Map<string, ReaderOutcome>;
  /** The emulated ZVT terminal's end-of-day (the native reader has none). */
  endOfDay?: () => Promise<ZvtSettlement>;
  close(): Promise<void>;
}

function nativeSimulator(
  dir: string,
  serial: number,
  delayMs: number,
  clock: Clock,
  logger: Logger,
): SimulatedReader {
  const stateFile = path.join(dir, 'reader.jsonl');
  const memory = new FileReaderMemory(stateFile, undefined, { fsync: false });
  const emulated = emulatedReader({
    memory,
    delayMs,
    serial,
    battery: { percentage: 100, pluggedIn: true },
    now: () => clock.now(),
    logger: partLogger(logger, 'reader'),
  });
  return {
    reader: emulated.reader,
    capabilities: NATIVE_READER_CAPABILITIES,
    stateFile,
    outcomes: () =>
      new Map(
        memory
          .all()
          .filter((r) => r.sequence > 0)
          .map((r): [string, ReaderOutcome] => [
            r.transaction_id,
            outcomeOf(r.phase, r.result_code),
          ]),
      ),
    close: () => emulated.close(),
  };
}

/** The ZVT driver (its record beside the journal) and the emulated ZVT terminal. */
function zvtSimulator(
  dir: string,
  serial: number,
  delayMs: number,
  clock: Clock,
  logger: Logger,
): SimulatedReader {
  const stateFile = path.join(dir, 'zvt-terminal.jsonl');
  const driverState = zvtStateFile(dir);
  const emulated = emulatedZvtReader({
    stateFile: driverState,
    memoryFile: stateFile,
    terminal: { delayMs, serial, now: () => clock.now() },
    logger: partLogger(logger, 'reader'),
  });
  return {
    reader: emulated.reader,
    capabilities: emulated.capabilities,
    endOfDay: zvtEndOfDay(emulated.reader),
    stateFile,
    outcomes: () => {
      if (!fs.existsSync(driverState)) return new Map();
      const { records } = parseStateFile(driverState);
      return new Map(
        records.map((r): [string, ReaderOutcome] => [
          r.transaction_id,
          r.phase === 'IN_PROGRESS' ? 'RUNNING' : outcomeOf(r.phase, r.result_code),
        ]),
      );
    },
    close: () => emulated.close(),
  };
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
