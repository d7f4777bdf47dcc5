/**
 * `tps bridge emulate|monitor|probe --protocol zvt`: the bench tools for ZVT payment
 * terminals (docs/zvt.md, "The bench tools"). Thin shells around zvt-emulate.ts,
 * zvt-monitor.ts and zvt-probe.ts, with the output and exit codes of the native tools.
 *
 * With ZVT, `tcp://HOST:PORT` is a terminal speaking ZVT over TCP (plain APDUs), not a
 * serial-to-network bridge; serial lines run at 9600 baud, 2 stop bits, unless `--baud`.
 */
import { UsageError, parseCommandLine, withUsage } from '../../common/cli.js';
import type { ApduChannel } from '../zvt/channel.js';
import { ZvtSerialLink } from '../zvt/serial-link.js';
import { connectZvtTcp } from '../zvt/tcp-channel.js';
import { openSerialPort } from '../transport/serial-port.js';
import { openPty } from '../transport/pty.js';
import type { OpenPort } from '../transport/port.js';
import { connectTcp, parseTcpAddress } from '../transport/tcp.js';
import { integer, untilStopped } from './cli-args.js';
import { parseListenAddress, startZvtEmulator, ZVT_BAUD_RATE } from './zvt-emulate.js';
import { monitorZvtBetween, monitorZvtPort, relayZvtTcp } from './zvt-monitor.js';
import { resultCodeText } from './zvt-names.js';
import { probeZvtTerminal, zvtProbeText } from './zvt-probe.js';
import { ZVT_EMULATE_USAGE, ZVT_MONITOR_USAGE, ZVT_PROBE_USAGE } from './zvt-usage.js';
import { MONITOR_OPTIONS } from './bridge-usage.js';

const PASSWORD = /^[0-9]{6}$/;

function checkPassword(password: string | undefined): string | undefined {
  if (password !== undefined && !PASSWORD.test(password)) {
    throw new UsageError(`--password is 6 digits, not '${password}'`);
  }
  return password;
}

export const runZvtEmulate = withUsage(ZVT_EMULATE_USAGE, async (argv: string[]) => {
  const { values } = parseCommandLine(
    {
      args: argv,
      options: {
        state: { type: 'string' },
        'delay-ms': { type: 'string' },
        password: { type: 'string' },
        tcp: { type: 'string' },
        port: { type: 'string' },
        baud: { type: 'string' },
        serial: { type: 'string' },
        'terminal-id': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    },
    ZVT_EMULATE_USAGE,
  );
  if (values.help) return void process.stdout.write(ZVT_EMULATE_USAGE);
  if (values.tcp !== undefined && values.port !== undefined) {
    throw new UsageError('emulate takes --tcp or --port, not both');
  }
  const terminalId = values['terminal-id'];
  if (terminalId !== undefined && !/^[0-9]{8}$/.test(terminalId)) {
    throw new UsageError(`--terminal-id is 8 digits, not '${terminalId}'`);
  }
  const emulator = await startZvtEmulator({
    state: values.state,
    delayMs: integer('--delay-ms', values['delay-ms'], 0),
    password: checkPassword(values.password),
    tcp: values.tcp === undefined ? undefined : parseListenAddress(values.tcp),
    port: values.port,
    baudRate: integer('--baud', values.baud, 1),
    serial: integer('--serial', values.serial, 0),
    terminalId,
  });
  process.stdout.write(`${emulator.address}\n`);
  process.stderr.write(
    `tps bridge emulate: emulated ZVT terminal ${values.tcp ? 'listening on' : 'on'} ${emulator.description}; ` +
      `password ${values.password ?? '000000'}; memory ${values.state ?? 'in this process only'}. Ctrl-C stops it.\n`,
  );
  emulator.terminal.on('entry', (entry) => {
    const result = entry.result_code === undefined ? '' : ` ${resultCodeText(entry.result_code)}`;
    process.stderr.write(
      `  receipt ${String(entry.receipt_number).padStart(4, '0')} ${entry.kind} ${entry.phase}${result} amount ${entry.amount}\n`,
    );
  });
  emulator.terminal.on('display', (lines) => {
    process.stderr.write(`  display: ${lines.map((line) => JSON.stringify(line)).join(' ')}\n`);
  });
  await untilStopped();
  await emulator.close();
});

export const runZvtMonitor = withUsage(ZVT_MONITOR_USAGE, async (argv: string[]) => {
  const { values, positionals } = parseCommandLine(
    {
      args: argv,
      options: MONITOR_OPTIONS,
      allowPositionals: true,
    },
    ZVT_MONITOR_USAGE,
  );
  if (values.help) return void process.stdout.write(ZVT_MONITOR_USAGE);
  const baudRate = integer('--baud', values.baud, 1) ?? ZVT_BAUD_RATE;
  const print = (line: string) => process.stdout.write(`${line}\n`);
  const log = (line: string) => process.stderr.write(`tps bridge monitor: ${line}\n`);
  const want = values.between ? 2 : 1;
  if (positionals.length !== want) {
    throw new UsageError(
      values.between
        ? 'monitor --between needs two ports'
        : 'monitor needs one PORT (or --between A B)',
    );
  }
  const [first, second] = positionals as [string, string | undefined];
  const tcpFirst = parseTcpAddress(first);
  if (values.between && second?.startsWith('listen:')) {
    if (!tcpFirst) {
      throw new UsageError(
        'monitor --between … listen:HOST:PORT needs the terminal as tcp://HOST:PORT',
      );
    }
    const relay = await relayZvtTcp(parseListenAddress(second.slice('listen:'.length)), tcpFirst, {
      print,
      full: values.full,
      json: values.json,
      log,
    });
    const listening = `tcp://${relay.host}:${relay.port}`;
    print(values.json ? JSON.stringify({ listening }) : listening);
    log(
      `forwarding ECR connections on tcp://${relay.host}:${relay.port} to ${first}; Ctrl-C stops it.`,
    );
    await untilStopped();
    await relay.close();
    return;
  }
  if (values.between && positionals.some((spec) => parseTcpAddress(spec))) {
    throw new UsageError(
      'ZVT over TCP has no serial framing: forward it with --between tcp://PT_HOST:PORT listen:HOST:PORT',
    );
  }
  const ports: OpenPort[] = [];
  try {
    for (const spec of positionals) {
      const tcp = parseTcpAddress(spec);
      const port = tcp
        ? await connectTcp(tcp)
        : spec === 'pty' && values.between
          ? await openPty()
          : await openSerialPort(spec, { baudRate, stopBits: 2 });
      ports.push(port);
      if ('path' in port) {
        const path = String(port.path);
        print(values.json ? JSON.stringify({ pty: path }) : path);
      }
    }
    const [a, b] = ports as [OpenPort, OpenPort | undefined];
    const framing = tcpFirst ? 'tcp' : 'serial';
    log(
      `${b ? `forwarding between ${a.description} and ${b.description}` : `listening on ${a.description}`} (ZVT ${framing === 'tcp' ? 'over TCP' : 'serial framing'}); Ctrl-C stops it.`,
    );
    const options = { print, full: values.full, json: values.json };
    if (b) monitorZvtBetween(a.stream, b.stream, { ...options, names: ['A', 'B'] });
    else monitorZvtPort(a.stream, { ...options, framing });
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
      log(`${ended} closed`);
      process.exitCode = 1;
    }
  } finally {
    for (const port of ports) await port.close();
  }
});

export const runZvtProbe = withUsage(ZVT_PROBE_USAGE, async (argv: string[]) => {
  const { values, positionals } = parseCommandLine(
    {
      args: argv,
      options: {
        register: { type: 'boolean' },
        password: { type: 'string' },
        'timeout-ms': { type: 'string' },
        baud: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
    },
    ZVT_PROBE_USAGE,
  );
  if (values.help) return void process.stdout.write(ZVT_PROBE_USAGE);
  const [spec] = positionals;
  if (!spec || positionals.length > 1)
    throw new UsageError('probe needs one PORT or tcp://HOST:PORT');
  const password = checkPassword(values.password);
  const timeoutMs = integer('--timeout-ms', values['timeout-ms'], 1);
  const baudRate = integer('--baud', values.baud, 1) ?? ZVT_BAUD_RATE;
  const tcp = parseTcpAddress(spec);
  let channel: ApduChannel;
  let port: OpenPort;
  if (tcp) {
    const connection = await connectZvtTcp(tcp);
    channel = connection.channel;
    port = connection.port;
  } else {
    port = await openSerialPort(spec, { baudRate, stopBits: 2 });
    channel = new ZvtSerialLink(port.stream, { baudRate });
  }
  try {
    const report = await probeZvtTerminal(channel, {
      register: values.register ?? false,
      ...(password === undefined ? {} : { password }),
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
    });
    process.stdout.write(
      values.json ? `${JSON.stringify(report, null, 2)}\n` : zvtProbeText(port.description, report),
    );
    if (!report.ok) process.exitCode = 1;
  } finally {
    await port.close();
  }
});
