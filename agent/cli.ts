/**
 * `tps agent --config FILE`, `tps agent doctor --config FILE` and `tps agent pair`. Each
 * loads only what it runs: a running agent never carries doctor's or pairing's code
 * (docs/performance.md, "The packaged agent").
 */
import { LogFormat, logDestination } from '../common/logging.js';
import { UsageError, parseCommandLine } from '../common/cli.js';
import { systemClock } from '../common/clock.js';
import { withDeadline } from '../common/deadline.js';
import { AgentConfigError, DEFAULT_DATA_DIR, loadAgentConfig } from './config.js';
import path from 'node:path';
import { mkdirSync } from 'node:fs';
import pino from 'pino';
import type { RunningAgent } from './agent.js';
import type { Hardware } from './hardware.js';
import { createAgentLogger } from './logging.js';
import {
  confirmKept,
  overlay,
  readKeptConfig,
  refuseKept,
  type RefusedConfig,
} from './fleet-config.js';
import { LogLevels, LogRing, keepingLines } from './fleet-logs.js';
import { LineTrace } from './fleet-trace.js';
import { RESTART_EXIT_CODE, prepareUpdates } from './update-wiring.js';

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
  -h, --help      this text (and 'tps agent doctor --help', 'tps agent pair --help')
`;

export const DOCTOR_USAGE = `Usage: tps agent doctor --config FILE [--json]

Checks a terminal's setup without disturbing a running agent: the config, the clock, the
journal, the serial ports, the reader, the printer and the broker. Prints a checklist
(✓ fine, ! works but look, ✗ failed, with what to do); exit code 0 when no check failed,
1 otherwise.

  --config FILE   the agent's config file (required)
  --json          print one JSON object: {config, checks: [{status, title, detail}], failed}
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

async function runPair(argv: string[], command: AgentCommand): Promise<void> {
  const { values } = parseCommandLine(
    {
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
    },
    PAIR_USAGE,
  );
  if (values.help) return void process.stdout.write(PAIR_USAGE);
  if (!values.relay) throw new UsageError('--relay URL is needed', PAIR_USAGE);
  const configFile = values.config ?? '/etc/tps-agent/agent.json';
  const { pairAgent } = await import('./pair.js');
  await pairAgent({
    relay: values.relay,
    configFile,
    // The emulated reader's memory is written as the agent runs: beside its journal, in the
    // data directory, not beside the config (read-only to the agent).
    reader: values['emulated-reader']
      ? {
          emulated: {
            // Relative as --data-dir is: both are read against the config's folder.
            state_file: path.join(values['data-dir'] ?? DEFAULT_DATA_DIR, 'emulated-reader.json'),
          },
        }
      : { port: values['reader-port'] ?? '/dev/ttyACM0' },
    ...(values['data-dir'] ? { dataDir: values['data-dir'] } : {}),
    write: (line) => process.stdout.write(`${line}\n`),
    usage: PAIR_USAGE,
  });
  if (values.start) {
    await runDaemon(configFile);
    return;
  }
  process.stdout.write(
    command === 'tps-agent'
      ? [
          `Let the agent's user read it: chown root:tps-agent ${configFile} && chmod 0640 ${configFile}`,
          `Check: runuser -u tps-agent -- tps-agent doctor --config ${configFile}`,
          'Start the agent: systemctl enable --now tps-agent',
          '',
        ].join('\n')
      : `Start the agent: systemctl enable --now tps-agent (or: tps agent --config ${configFile})\n`,
  );
}

/** How the agent was run: `tps-agent` (a release, installed) or `tps agent` (the project). */
export type AgentCommand = 'tps-agent' | 'tps agent';

export async function runAgent(argv: string[], command: AgentCommand = 'tps agent'): Promise<void> {
  if (argv[0] === 'pair') return runPair(argv.slice(1), command);
  const doctor = argv[0] === 'doctor';
  const usage = doctor ? DOCTOR_USAGE : AGENT_USAGE;
  const { values, positionals } = parseCommandLine(
    {
      args: doctor ? argv.slice(1) : argv,
      options: {
        config: { type: 'string', short: 'c' },
        help: { type: 'boolean', short: 'h' },
        ...(doctor ? { json: { type: 'boolean' } } : {}),
      },
      allowPositionals: true,
    },
    usage,
  );
  if (values.help) return void process.stdout.write(usage);
  if (positionals.length > 0) {
    throw new UsageError(`unexpected argument '${String(positionals[0])}'`, usage);
  }
  if (!values.config) throw new UsageError('--config FILE is needed', usage);
  if (doctor) {
    const { runDoctor } = await import('./doctor.js');
    process.exitCode = await runDoctor(values.config, {
      clock: systemClock,
      write: (line) => process.stdout.write(`${line}\n`),
      json: values.json === true,
    });
    return;
  }
  await runDaemon(values.config);
}

/** How long a reader has to answer after its settings changed. */
const READER_TRIAL_MS = 10_000;

/** Why the reader does not answer a status request within `ms`; undefined when it does. */
async function readerFailure(hardware: Hardware, ms: number): Promise<string | undefined> {
  try {
    await withDeadline(hardware.reader.status(), ms, `no answer within ${ms / 1000} s`);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

async function runDaemon(file: string): Promise<void> {
  let base;
  try {
    base = loadAgentConfig(file);
  } catch (error) {
    // The file --config names is part of what the command was given: nothing started.
    if (error instanceof AgentConfigError) throw new UsageError(error.message);
    throw error;
  }
  const format = LogFormat.safeParse(process.env.TPS_LOG_FORMAT ?? 'auto');
  if (!format.success) throw new UsageError('TPS_LOG_FORMAT must be json, pretty or auto');
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
  // First: a half-done update is finished or undone before anything opens.
  const updates = prepareUpdates(base, logger);
  if (updates.restart !== undefined) {
    process.exitCode = RESTART_EXIT_CODE;
    return;
  }
  // Before the reader: a ZVT driver keeps its record there, and the directory is private.
  mkdirSync(base.data_dir, { recursive: true, mode: 0o700 });
  const [{ openHardware }, { startAgent }] = await Promise.all([
    import('./hardware.js'),
    import('./agent.js'),
  ]);
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
      ...(updates.agentVersion ? { agentVersion: updates.agentVersion } : {}),
      onUpdateOrder: updates.onUpdateOrder,
      endOfDay: {
        ...(hardware.endOfDay ? { run: hardware.endOfDay } : {}),
        onRequired: (listener) => hardware.onEndOfDayRequired(listener),
      },
      fleet: {
        base,
        restart: () => void restart(),
        setLogLevel: (level) => levels.set(level),
        reader: hardware.facts(),
        ...(refused ? { refused } : {}),
        logs,
        trace,
      },
    });
    hardware.onFactsChanged(() => agent.readerFacts(hardware.facts()));
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
  let stopping = false;
  const shutdown = (why: string, code: number) => {
    if (stopping) return;
    stopping = true;
    logger.info({ why }, 'stopping');
    updater.close();
    Promise.resolve(changing)
      .then(() => running?.agent.stop())
      .then(() => running?.hardware.close())
      .then(
        () => process.exit(code),
        (error: unknown) => {
          logger.error({ err: error }, 'stopping failed');
          process.exit(1);
        },
      );
  };
  // An update restarts through the supervisor (systemd's Restart=), which starts `current`.
  const first = running;
  const updater = updates.attach(
    () => {
      const { agent, hardware } = running ?? first;
      return { agent, reader: hardware.reader };
    },
    async (reason) => {
      shutdown(reason, RESTART_EXIT_CODE);
      await new Promise<never>(() => {});
    },
  );
  process.once('SIGINT', () => shutdown('SIGINT', 0));
  process.once('SIGTERM', () => shutdown('SIGTERM', 0));
}
