/**
 * `tps bridge …`: the bench tools for hardware teams (docs/bench-tools.md). Each
 * subcommand is a thin shell around a function in tools/ or printer/.
 */
import { UsageError, parseCommandLine, withUsage } from '../common/cli.js';
import {
  EMULATE_USAGE,
  MONITOR_OPTIONS,
  MONITOR_USAGE,
  PROBE_USAGE,
} from './tools/bridge-usage.js';
import { integer, takeProtocol, untilStopped } from './tools/cli-args.js';
import { startEmulator } from './tools/emulate.js';
import { monitorBetween, monitorPort } from './tools/monitor.js';
import { probeReader, probeText } from './tools/probe.js';
import type * as ZvtCli from './tools/zvt-cli.js';
import { ZVT_USAGE } from './tools/zvt-usage.js';
import { openPort } from './transport/open-port.js';
import type { OpenPort } from './transport/port.js';
import { openPty } from './transport/pty.js';

export const BRIDGE_USAGE = `Usage: tps bridge <command> [options]

Bench tools for card readers, ZVT payment terminals and receipt printers
(docs/bench-tools.md, docs/zvt.md). PORT is a serial port path (/dev/ttyUSB0,
/dev/pts/4, COM3) or tcp://HOST:PORT. emulate, monitor and probe speak the card
reader's own protocol unless --protocol zvt.

  emulate [--state FILE] [--delay-ms N]   run the emulated card reader on a new pty, print
          [--port PORT] [--baud N]        the device path it serves, run until Ctrl-C;
          [--battery N|none] [--plugged-in] [--serial N]
  monitor PORT [--baud N] [--full] [--json]
                                          print every frame the device on PORT sends
  monitor --between PORT_A PORT_B|pty     forward bytes between two ports and print the
          [--baud N] [--full] [--json]    frames of both directions ('pty': a new pty)
  probe PORT [--timeout-ms N] [--baud N] [--json]
                                          does the reader answer: status and last
                                          transaction; exit code 0 if it does, 1 if not
  print PORT FILE.png [options]           print a PNG on a receipt printer

Run 'tps bridge <command> --help' (with --protocol zvt for ZVT) for a command's options.

${ZVT_USAGE}`;

type ZvtTools = typeof ZvtCli;

/** A command per protocol; the ZVT ones are loaded only when asked for. */
const byProtocol =
  (
    native: (argv: string[]) => Promise<void>,
    zvt: (tools: ZvtTools) => (argv: string[]) => Promise<void>,
  ) =>
  async (argv: string[]): Promise<void> => {
    const { protocol, rest } = takeProtocol(argv);
    if (protocol === 'native') return native(rest);
    return zvt(await import('./tools/zvt-cli.js'))(rest);
  };

const commands: Record<string, (argv: string[]) => Promise<void>> = {
  emulate: byProtocol(withUsage(EMULATE_USAGE, runEmulate), (tools) => tools.runZvtEmulate),
  monitor: byProtocol(withUsage(MONITOR_USAGE, runMonitor), (tools) => tools.runZvtMonitor),
  probe: byProtocol(withUsage(PROBE_USAGE, runProbe), (tools) => tools.runZvtProbe),
  print: async (argv) => (await import('./printer/cli.js')).runBridgePrint(argv),
};

export async function runBridge(argv: string[]): Promise<void> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h') {
    return void process.stdout.write(BRIDGE_USAGE);
  }
  const command = commands[name];
  if (!command) throw new UsageError(`unknown command '${name}'`, BRIDGE_USAGE);
  try {
    await command(rest);
  } catch (error) {
    // A wrong --protocol is found before the command's own usage is known.
    if (error instanceof UsageError && error.usage === undefined) {
      throw new UsageError(error.message, BRIDGE_USAGE);
    }
    throw error;
  }
}

async function runEmulate(argv: string[]): Promise<void> {
  const { values } = parseCommandLine(
    {
      args: argv,
      options: {
        state: { type: 'string' },
        'delay-ms': { type: 'string' },
        port: { type: 'string' },
        baud: { type: 'string' },
        battery: { type: 'string' },
        'plugged-in': { type: 'boolean' },
        serial: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    },
    EMULATE_USAGE,
  );
  if (values.help) return void process.stdout.write(EMULATE_USAGE);
  const emulator = await startEmulator({
    state: values.state,
    delayMs: integer('--delay-ms', values['delay-ms'], 0),
    port: values.port,
    baudRate: integer('--baud', values.baud, 1),
    battery:
      values.battery === 'none'
        ? false
        : {
            percentage: integer('--battery', values.battery, 0, 100),
            pluggedIn: values['plugged-in'] ?? false,
          },
    serial: integer('--serial', values.serial, 0),
  });
  process.stdout.write(`${emulator.path}\n`);
  process.stderr.write(
    `tps bridge emulate: emulated card reader on ${emulator.description}; ` +
      `memory ${values.state ?? 'in this process only'}. Ctrl-C stops it.\n`,
  );
  emulator.firmware.on('record', (record) => {
    const outcome = record.result_code ? ` ${record.result_code}` : '';
    process.stderr.write(`  ${record.transaction_id} ${record.phase}${outcome}\n`);
  });
  await untilStopped();
  await emulator.close();
}

async function runMonitor(argv: string[]): Promise<void> {
  const { values, positionals } = parseCommandLine(
    {
      args: argv,
      options: MONITOR_OPTIONS,
      allowPositionals: true,
    },
    MONITOR_USAGE,
  );
  if (values.help) return void process.stdout.write(MONITOR_USAGE);
  const baudRate = integer('--baud', values.baud, 1);
  const print = (line: string) => process.stdout.write(`${line}\n`);
  const want = values.between ? 2 : 1;
  if (positionals.length !== want) {
    throw new UsageError(
      values.between
        ? 'monitor --between needs two ports'
        : 'monitor needs one PORT (or --between A B)',
    );
  }
  const ports: OpenPort[] = [];
  try {
    for (const spec of positionals) {
      const port =
        spec === 'pty' && values.between ? await openPty() : await openPort(spec, { baudRate });
      ports.push(port);
      if ('path' in port) {
        const path = String(port.path);
        print(values.json ? JSON.stringify({ pty: path }) : path);
      }
    }
    const [a, b] = ports as [OpenPort, OpenPort | undefined];
    process.stderr.write(
      `tps bridge monitor: ${b ? `forwarding between ${a.description} and ${b.description}` : `listening on ${a.description}`}; Ctrl-C stops it.\n`,
    );
    const options = { print, full: values.full, json: values.json };
    if (b) monitorBetween(a.stream, b.stream, { ...options, names: ['A', 'B'] });
    else monitorPort(a.stream, options);
    const closed = Promise.race(
      ports.map(
        (port) =>
          new Promise<string>((resolve) =>
            port.stream.once('close', () => resolve(port.description)),
          ),
      ),
    );
    const ended = await Promise.race([untilStopped().then(() => undefined), closed]);
    if (ended) {
      process.stderr.write(`tps bridge monitor: ${ended} closed\n`);
      process.exitCode = 1;
    }
  } finally {
    for (const port of ports) await port.close();
  }
}

async function runProbe(argv: string[]): Promise<void> {
  const { values, positionals } = parseCommandLine(
    {
      args: argv,
      options: {
        'timeout-ms': { type: 'string' },
        baud: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
    },
    PROBE_USAGE,
  );
  if (values.help) return void process.stdout.write(PROBE_USAGE);
  const [spec] = positionals;
  if (!spec || positionals.length > 1) throw new UsageError('probe needs one PORT');
  const baudRate = integer('--baud', values.baud, 1);
  const port = await openPort(spec, { baudRate });
  try {
    const report = await probeReader(port.stream, {
      timeoutMs: integer('--timeout-ms', values['timeout-ms'], 1),
      baudRate,
    });
    process.stdout.write(
      values.json ? `${JSON.stringify(report, null, 2)}\n` : probeText(port.description, report),
    );
    if (!report.ok) process.exitCode = 1;
  } finally {
    await port.close();
  }
}
