/** `tps agent --config FILE`, `tps agent doctor --config FILE` and `tps agent pair`. */
import { LogFormat, logDestination } from '../common/logging.js';
import { parseArgs } from 'node:util';
import { startAgent, type RunningAgent } from './agent.js';
import { systemClock } from '../common/clock.js';
import { AgentConfigError, loadAgentConfig } from './config.js';
import { runDoctor } from './doctor.js';
import { openHardware, type Hardware } from './hardware.js';
import { mkdirSync } from 'node:fs';
import { createAgentLogger } from './logging.js';
import pino from 'pino';
import {
  confirmKept,
  overlay,
  readKeptConfig,
  refuseKept,
  type RefusedConfig,
} from './fleet-config.js';
import { LogLevels, LogRing, keepingLines } from './fleet-logs.js';
import { LineTrace } from './fleet-trace.js';
import { PairingFailed, pairAgent } from './pair.js';

export const AGENT_USAGE = `Usage: tps agent --config FILE
       tps agent doctor --config FILE
       tps agent pair --relay URL [--config FILE] [options]

Runs the terminal agent: drives the card reader and receipt printer named in FILE and
keeps the MQTT link to the relay. FILE is the JSON config that 'tps terminal create --out
FILE' writes (docs/agent.md documents every field).

  doctor        checks the config, the serial ports, the reader, the printer, the broker
                and the clock, prints a checklist and exits non-zero if a check failed
  pair          pairs a fresh terminal: shows a code for someone with the account
                credential to claim ('tps terminal claim CODE'), then writes FILE
                (see 'tps agent pair --help')

Options:
  --config FILE   the agent's config file (required)
  -h, --help      this text
`;

export const PAIR_USAGE = `Usage: tps agent pair --relay URL [--config FILE] [options]

Asks the relay for a pairing code, prints it and waits (up to the code's lifetime, 10
minutes by default) until someone with the account credential claims it:
  tps terminal claim CODE --name NAME [--cohort cohort-NAME]
The agent then receives its terminal id and broker credential over HTTPS, writes FILE
(mode 0600) and exits, telling how to start it; with --start it runs at once.

  --relay URL             the relay's API address, e.g. https://relay.example.com/pos
                          (https://; http:// only to this machine)
  --config FILE           where to write the config (default /etc/tps-agent/agent.json;
                          must not exist)
  --reader-port PATH      the card reader's serial device (default /dev/ttyACM0)
  --emulated-reader       use the emulated card reader instead (bench and demo)
  --data-dir DIR          the agent's journal directory (default /var/lib/tps-agent)
  --start                 run the agent once paired, in this process
  -h, --help              this text
`;

async function runPair(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      relay: { type: 'string' },
      config: { type: 'string', short: 'c' },
      'reader-port': { type: 'string' },
      'emulated-reader': { type: 'boolean' },
      'data-dir': { type: 'string' },
      start: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(PAIR_USAGE);
    return;
  }
  if (!values.relay) {
    process.stderr.write(PAIR_USAGE);
    process.exitCode = 2;
    return;
  }
  const configFile = values.config ?? '/etc/tps-agent/agent.json';
  try {
    await pairAgent({
      relay: values.relay,
      configFile,
      reader: values['emulated-reader']
        ? { emulated: { state_file: 'emulated-reader.json' } }
        : { port: values['reader-port'] ?? '/dev/ttyACM0' },
      ...(values['data-dir'] ? { dataDir: values['data-dir'] } : {}),
      write: (line) => process.stdout.write(`${line}\n`),
    });
  } catch (error) {
    process.stderr.write(`tps agent pair: ${(error as Error).message}\n`);
    process.exitCode = error instanceof PairingFailed ? 1 : 3;
    return;
  }
  if (values.start) {
    await runDaemon(configFile);
    return;
  }
  process.stdout.write(
    `Start the agent: systemctl enable --now tps-agent (or: tps agent --config ${configFile})\n`,
  );
}

export async function runAgent(argv: string[]): Promise<void> {
  if (argv[0] === 'pair') return runPair(argv.slice(1));
  const doctor = argv[0] === 'doctor';
  const { values, positionals } = parseArgs({
    args: doctor ? argv.slice(1) : argv,
    options: { config: { type: 'string', short: 'c' }, help: { type: 'boolean', short: 'h' } },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) {
    process.stdout.write(AGENT_USAGE);
    return;
  }
  if (!values.config || positionals.length > 0) {
    process.stderr.write(AGENT_USAGE);
    process.exitCode = 2;
    return;
  }
  if (doctor) {
    process.exitCode = await runDoctor(values.config, {
      clock: systemClock,
      write: (line) => process.stdout.write(`${line}\n`),
    });
    return;
  }
  await runDaemon(values.config);
}

/** How long a reader has to answer after its settings changed. */
const READER_TRIAL_MS = 10_000;

/** Why the reader does not answer a status request within `ms`; undefined when it does. */
async function readerFailure(hardware: Hardware, ms: number): Promise<string | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      hardware.reader.status(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${ms / 1000} s`)), ms);
      }),
    ]);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  } finally {
    clearTimeout(timer);
  }
}

async function runDaemon(file: string): Promise<void> {
  let base;
  try {
    base = loadAgentConfig(file);
  } catch (error) {
    if (!(error instanceof AgentConfigError)) throw error;
    process.stderr.write(`tps agent: ${error.message}\n`);
    process.exitCode = 2;
    return;
  }
  const format = LogFormat.safeParse(process.env.TPS_LOG_FORMAT ?? 'auto');
  if (!format.success) {
    process.stderr.write('tps agent: TPS_LOG_FORMAT must be json, pretty or auto\n');
    process.exitCode = 2;
    return;
  }
  // The newest lines stay in memory for remote diagnostics; the fleet may set the level.
  const logs = new LogRing();
  const levels = new LogLevels();
  const logger = createAgentLogger(
    base.log_level,
    base.terminal_id,
    keepingLines(logs, logDestination(format.data) ?? pino.destination({ dest: 1, sync: true })),
    levels.onChild,
  );
  levels.root = logger;
  // Before the reader: a ZVT driver keeps its record there, and the directory is private.
  mkdirSync(base.data_dir, { recursive: true, mode: 0o700 });
  const trace = new LineTrace(systemClock);
  /** The reader settings the reader refused since this process started (not tried again). */
  let refused: RefusedConfig | undefined;

  /** The agent and its hardware under the configuration the fleet last gave (fleet-config.ts). */
  const start = async (): Promise<{ agent: RunningAgent; hardware: Hardware }> => {
    const kept = readKeptConfig(base.data_dir);
    const overlaid = kept ? overlay(base, kept.config) : undefined;
    const config = overlaid?.ok ? overlaid.config : base;
    const hardware = openHardware(config, logger, { trace });
    if (kept?.trial) {
      // New reader settings: the reader must answer with them before a payment can start,
      // else the ones before come back and the new ones are reported refused.
      const failure = await readerFailure(hardware, READER_TRIAL_MS);
      if (failure === undefined) {
        confirmKept(base.data_dir);
      } else {
        logger.warn({ version: kept.version, failure }, 'the reader refused the new settings');
        await hardware.close();
        refused = refuseKept(
          base.data_dir,
          `the reader did not answer with these settings: ${failure}`,
        );
        return start();
      }
    } else {
      hardware.reader.connect().catch(() => undefined); // logged; retried on use
    }
    const agent = await startAgent(config, {
      reader: hardware.reader,
      readerCapabilities: hardware.capabilities,
      ...(hardware.printer ? { printer: hardware.printer } : {}),
      logger,
      fleet: {
        base,
        restart: () => void restart(),
        setLogLevel: (level) => levels.set(level),
        reader: { model: hardware.model },
        ...(refused ? { refused } : {}),
        logs,
        trace,
      },
    });
    return { agent, hardware };
  };
  let running: Awaited<ReturnType<typeof start>> | undefined;
  let changing: Promise<void> | undefined;
  // Idle, by the fleet's configuration: the agent stops taking commands, the hardware closes
  // and both start again with the new settings, in this process (no payment runs meanwhile).
  const restart = () =>
    (changing ??= (async () => {
      logger.info('restarting the agent with the new reader and printer settings');
      await running?.agent.stop();
      await running?.hardware.close();
      running = await start();
    })()
      .catch((error: unknown) => {
        logger.fatal({ err: error }, 'restarting the agent failed');
        process.exit(1);
      })
      .finally(() => {
        changing = undefined;
      }));
  running = await start();
  logger.info({ terminalId: base.terminal_id, config: file }, 'agent started');
  const shutdown = (signal: string) => {
    logger.info({ signal }, 'stopping');
    Promise.resolve(changing)
      .then(() => running?.agent.stop())
      .then(() => running?.hardware.close())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          logger.error({ err: error }, 'stopping failed');
          process.exit(1);
        },
      );
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}
