/** `tps agent --config FILE` and `tps agent doctor --config FILE`. */
import { LogFormat, logDestination } from '../common/logging.js';
import { parseArgs } from 'node:util';
import { startAgent } from './agent.js';
import { systemClock } from '../common/clock.js';
import { AgentConfigError, loadAgentConfig } from './config.js';
import { runDoctor } from './doctor.js';
import { openHardware } from './hardware.js';
import { createAgentLogger } from './logging.js';

export const AGENT_USAGE = `Usage: tps agent --config FILE
       tps agent doctor --config FILE

Runs the terminal agent: drives the card reader and receipt printer named in FILE and
keeps the MQTT link to the relay. FILE is the JSON config that 'tps terminal create --out
FILE' writes (docs/agent.md documents every field).

  doctor        checks the config, the serial ports, the reader, the printer, the broker
                and the clock, prints a checklist and exits non-zero if a check failed

Options:
  --config FILE   the agent's config file (required)
  -h, --help      this text
`;

export async function runAgent(argv: string[]): Promise<void> {
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

async function runDaemon(file: string): Promise<void> {
  let config;
  try {
    config = loadAgentConfig(file);
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
  const logger = createAgentLogger(
    config.log_level,
    config.terminal_id,
    logDestination(format.data),
  );
  const hardware = openHardware(config.reader, config.printer, logger);
  hardware.reader.connect().catch(() => undefined); // logged; retried on use
  const agent = await startAgent(config, {
    reader: hardware.reader,
    ...(hardware.printer ? { printer: hardware.printer } : {}),
    logger,
  });
  logger.info({ terminalId: config.terminal_id, config: file }, 'agent started');
  const shutdown = (signal: string) => {
    logger.info({ signal }, 'stopping');
    agent
      .stop()
      .then(() => hardware.close())
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
