/** `tps terminal create`: registers a real terminal and writes its agent's config file. */
import fs from 'node:fs';
import path from 'node:path';
import { UsageError, parseCommandLine } from '../common/cli.js';
import { ReaderProtocol, TerminalCreateResponse } from '../protocol/index.js';
import {
  accessOptions,
  actingHelp,
  actingAccount,
  actingOptions,
  callRelay,
  subcommand,
} from './relay-call.js';

export const TERMINAL_USAGE = `Usage: tps terminal create --out FILE [options]
       tps terminal claim CODE [--name NAME] [--cohort cohort-NAME]   (tps terminal claim --help)

Registers a real terminal on a running relay, writes its agent's config file (with the
agent's broker credential, shown nowhere else) and prints the terminal id and the POS
API credential (shown this once). Copy FILE to the terminal as /etc/tps-agent/agent.json.

  --out FILE              where to write the agent config (mode 0600; must not exist)
  --reader-protocol P     native (the default) or zvt (a payment terminal driven over ZVT)
  --reader-port PATH      the reader's serial device (default /dev/ttyACM0; zvt /dev/ttyUSB0)
  --reader-tcp HOST:PORT  zvt only: the terminal on the network instead (port 20007 usually)
  --reader-password PWD   zvt only: the terminal's 6-digit password (default 000000)
  --reader-profile NAME   zvt only: the vendor profile (docs/zvt.md)
  --emulated-reader       use the emulated reader of that protocol instead (bench and demo)
  --printer-serial PATH   a receipt printer on a serial device
  --printer-tcp HOST:PORT a network receipt printer (port 9100 style)
  --battery               the terminal runs on a battery
  --broker-ca PATH        the PEM CA bundle the agent checks the broker's certificate
                          against (a private CA or a self-signed certificate), as its
                          path on the terminal; relative paths are taken from the
                          config file's directory. Default: the system's CAs
${actingHelp(26)}  --json                  print {terminal_id, username, password, config_file} as JSON
  --base-url, --username, --password   as for 'tps simulator create'
  -h, --help              this text
`;

export async function runTerminal(argv: string[]): Promise<void> {
  const { values, positionals } = parseCommandLine(
    {
      args: argv,
      options: {
        ...accessOptions,
        ...actingOptions,
        out: { type: 'string' },
        'reader-protocol': { type: 'string' },
        'reader-port': { type: 'string' },
        'reader-tcp': { type: 'string' },
        'reader-password': { type: 'string' },
        'reader-profile': { type: 'string' },
        'emulated-reader': { type: 'boolean' },
        'printer-serial': { type: 'string' },
        'printer-tcp': { type: 'string' },
        battery: { type: 'boolean' },
        'broker-ca': { type: 'string' },
      },
      allowPositionals: true,
    },
    TERMINAL_USAGE,
  );
  if (values.help) return void process.stdout.write(TERMINAL_USAGE);
  subcommand(positionals, ['create'], TERMINAL_USAGE);
  const out = values.out;
  if (!out) {
    throw new UsageError('--out FILE is needed: the agent config is written there', TERMINAL_USAGE);
  }
  if (fs.existsSync(out)) throw new Error(`${out} exists; choose a new file`);
  const acting = actingAccount(values, TERMINAL_USAGE);
  // Checked before the terminal is registered: a refused option must not leave one behind.
  const reader = usage(() => readerSection(values), TERMINAL_USAGE);
  const tcp = values['printer-tcp'] ? /^([^:]+):(\d+)$/.exec(values['printer-tcp']) : undefined;
  if (values['printer-tcp'] && !tcp) {
    throw new UsageError('--printer-tcp must be HOST:PORT', TERMINAL_USAGE);
  }
  const printer = tcp
    ? { type: 'tcp', host: tcp[1], port: Number(tcp[2]) }
    : values['printer-serial']
      ? { type: 'serial', path: values['printer-serial'] }
      : { type: 'none' };

  const issued = TerminalCreateResponse.parse(
    await callRelay(
      values,
      '/terminal/create',
      { ...acting.named, printer: printer.type !== 'none', battery: values.battery ?? false },
      TERMINAL_USAGE,
      acting.env,
    ),
  );
  // The terminal is registered by now: its config is written in any case, or its
  // credentials would be lost.
  const tls = issued.agent.broker_url.startsWith('mqtts:');
  const ca = tls ? values['broker-ca'] : undefined;
  if (values['broker-ca'] !== undefined && !tls) {
    process.stderr.write(
      `Warning: the relay hands out ${issued.agent.broker_url} (no TLS): --broker-ca left out of the config.\n`,
    );
  }
  const config = {
    terminal_id: issued.terminal_id,
    broker: {
      url: issued.agent.broker_url,
      username: issued.agent.username,
      password: issued.agent.password,
      ...(ca !== undefined ? { ca } : {}),
    },
    reader,
    printer,
  };
  fs.mkdirSync(path.dirname(path.resolve(out)), { recursive: true });
  fs.writeFileSync(out, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
  const pos = {
    terminal_id: issued.terminal_id,
    username: issued.username,
    password: issued.password,
  };
  if (values.json) {
    process.stdout.write(`${JSON.stringify({ ...pos, config_file: path.resolve(out) })}\n`);
  } else {
    process.stdout.write(
      `Terminal ${issued.terminal_id} registered; agent config written to ${out}\n` +
        `POS credential (shown this once):\n  username ${issued.username}\n  password ${issued.password}\n` +
        `Install: copy ${out} to the terminal and run 'tps agent --config FILE' (docs/agent.md).\n`,
    );
  }
}

/** Runs a check whose Error names a wrong option, as a UsageError. */
function usage<T>(check: () => T, text: string): T {
  try {
    return check();
  } catch (error) {
    throw new UsageError((error as Error).message, text);
  }
}

/** The agent config's `reader` section from the options; throws naming a wrong one. */
function readerSection(values: {
  'reader-protocol'?: string;
  'reader-port'?: string;
  'reader-tcp'?: string;
  'reader-password'?: string;
  'reader-profile'?: string;
  'emulated-reader'?: boolean;
}): Record<string, unknown> {
  const protocol = ReaderProtocol.safeParse(values['reader-protocol'] ?? 'native');
  if (!protocol.success) throw new Error('--reader-protocol must be native or zvt');
  const zvtOnly = ['reader-tcp', 'reader-password', 'reader-profile'] as const;
  if (protocol.data === 'native') {
    const given = zvtOnly.filter((option) => values[option] !== undefined);
    if (given.length) throw new Error(`--${given[0]} is for --reader-protocol zvt only`);
    return values['emulated-reader']
      ? { emulated: { state_file: 'emulated-reader.json' } }
      : { port: values['reader-port'] ?? '/dev/ttyACM0' };
  }
  const where = [values['emulated-reader'], values['reader-port'], values['reader-tcp']];
  if (where.filter((given) => given !== undefined && given !== false).length > 1) {
    throw new Error('give one of --reader-port, --reader-tcp or --emulated-reader');
  }
  if (values['reader-tcp'] !== undefined && !/^[^\s:]+:\d{1,5}$/.test(values['reader-tcp'])) {
    throw new Error('--reader-tcp must be HOST:PORT, e.g. 192.168.1.50:20007');
  }
  const password = values['reader-password'];
  if (password !== undefined && !/^\d{6}$/.test(password)) {
    throw new Error("--reader-password must be the terminal's 6-digit password");
  }
  return {
    protocol: 'zvt',
    ...(values['emulated-reader']
      ? { emulated: { state_file: 'emulated-zvt-terminal.jsonl' } }
      : values['reader-tcp'] !== undefined
        ? { tcp: values['reader-tcp'] }
        : { port: values['reader-port'] ?? '/dev/ttyUSB0' }),
    ...(password !== undefined ? { password } : {}),
    ...(values['reader-profile'] !== undefined ? { profile: values['reader-profile'] } : {}),
  };
}
