/** `tps cloud`, and the account's commands on a running relay: simulator, terminal, credential. */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import {
  ReaderProtocol,
  CredentialRevokeResponse,
  CredentialRotateResponse,
  SimulatorCreateResponse,
  TerminalCreateResponse,
} from '../protocol/index.js';
import { CLOUD_SETTINGS, loadCloudConfig } from './config.js';
import { startRelay, type Relay } from './relay.js';

const cloudFlagOptions = Object.fromEntries(
  Object.values(CLOUD_SETTINGS).map((s) => [s.flag, { type: 'string' as const }]),
);

export const CLOUD_USAGE = `Usage: tps cloud [options]

Starts the cloud relay: the HTTP API with its embedded store and simulated terminals.
Every option can also be set with its environment variable (see docs/configuration.md).

${Object.values(CLOUD_SETTINGS)
  .map((s) => `  --${s.flag.padEnd(22)} ${s.env.padEnd(24)} ${s.doc}`)
  .join('\n')}
`;

export async function runCloud(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { ...cloudFlagOptions, help: { type: 'boolean', short: 'h' } },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(CLOUD_USAGE);
    return;
  }
  const config = loadCloudConfig(values, process.env);
  const relay = await startRelay(config);
  process.stderr.write(
    showBanner(relay, {
      terminal: process.stderr.isTTY === true,
      file: path.resolve(config.dataDir, CREDENTIALS_FILE),
    }),
  );
  const shutdown = (signal: string) => {
    relay.logger.info({ signal }, 'shutting down');
    relay.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', shutdown);
  process.once('SIGTERM', shutdown);
}

/** Where generated credentials go when standard error is no terminal (a log). */
export const CREDENTIALS_FILE = 'first-start-credentials.txt';

/**
 * The start-up banner. Generated credentials (and the curl lines that carry them) go to
 * standard error only when it is a terminal, which a person reads; when it is not (a
 * log collector, a file, a pipe), they go to a 0600 file whose path the banner names.
 */
function showBanner(relay: Relay, output: { terminal: boolean; file: string }): string {
  const { shown, secret } = banner(relay);
  if (secret.length === 0) return `${shown.join('\n')}\n`;
  if (output.terminal) return `${[...shown, ...secret].join('\n')}\n`;
  const fd = fs.openSync(output.file, 'w', 0o600);
  try {
    fs.fchmodSync(fd, 0o600);
    fs.writeFileSync(fd, `${secret.join('\n').trim()}\n`);
  } finally {
    fs.closeSync(fd);
  }
  return `${[
    ...shown,
    '',
    `Generated credentials (shown this once) written to ${output.file} (mode 0600),`,
    'not here, as standard error is no terminal: keep them, then delete the file.',
  ].join('\n')}\n`;
}

function banner(relay: Relay): { shown: string[]; secret: string[] } {
  const shown = [
    '',
    `Terminal payment relay listening on ${relay.baseUrl}/v1/ (and /v0/)`,
    `OpenAPI: ${relay.baseUrl}/v1/openapi.json`,
  ];
  const secret: string[] = [];
  const account = relay.bootstrap.accountCredential;
  if (account) {
    secret.push(
      '',
      'Account API credential (shown this once; keep it to create simulators):',
      `  username ${account.username}`,
      `  password ${account.password}`,
    );
  }
  const sim = relay.bootstrap.simulator;
  if (sim) {
    const auth = `${sim.username}:${sim.password}`;
    const post = (op: string, body: object) =>
      `  curl -s -u '${auth}' -H 'Content-Type: application/json' \\\n    -d '${JSON.stringify(body)}' ${relay.baseUrl}/v1/${op}`;
    shown.push('', `Simulated terminal ${sim.terminal_id} created.`);
    secret.push(
      '',
      `Simulated terminal ${sim.terminal_id} (credential shown this once):`,
      `  username ${sim.username}`,
      `  password ${sim.password}`,
      '',
      'Pay 10.00 EUR with it, then confirm:',
      post('transaction/purchase', {
        terminal_id: sim.terminal_id,
        external_id: 'order-1',
        requested_amount: 1000,
        currency: 'EUR',
      }),
      post('transaction/confirm', {
        terminal_id: sim.terminal_id,
        external_id: 'order-1',
        result_code: 'SUCCESS',
      }),
    );
  }
  shown.push('', 'More simulated terminals: tps simulator create --help', '');
  return { shown, secret };
}

export const SIMULATOR_USAGE = `Usage: tps simulator create [--reader-protocol native|zvt] [--json] [--base-url URL] [--username U] [--password P]

Creates a simulated terminal on a running relay and prints its terminal id, username
and password (shown this once). --reader-protocol zvt makes one whose agent drives an
emulated ZVT payment terminal. The account credential comes from the flags or from
TPS_ACCOUNT_USERNAME / TPS_ACCOUNT_PASSWORD; the relay from --base-url or TPS_BASE_URL
(default http://127.0.0.1:8080/pos).
`;

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
  --json                  print {terminal_id, username, password, config_file} as JSON
  --base-url, --username, --password   as for 'tps simulator create'
`;

const RelayAccess = z.object({
  baseUrl: z.url().default('http://127.0.0.1:8080/pos'),
  username: z
    .string({ error: 'an account username is needed (--username or TPS_ACCOUNT_USERNAME)' })
    .min(1, 'an account username is needed (--username or TPS_ACCOUNT_USERNAME)'),
  password: z
    .string({ error: 'an account password is needed (--password or TPS_ACCOUNT_PASSWORD)' })
    .min(1, 'an account password is needed (--password or TPS_ACCOUNT_PASSWORD)'),
});

export const accessOptions = {
  json: { type: 'boolean' },
  'base-url': { type: 'string' },
  username: { type: 'string' },
  password: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** The relay's address and the account credential, from the options or the environment. */
export function relayAccess(values: { 'base-url'?: string; username?: string; password?: string }) {
  const parsed = RelayAccess.safeParse({
    baseUrl: values['base-url'] ?? process.env.TPS_BASE_URL,
    username: values.username ?? process.env.TPS_ACCOUNT_USERNAME,
    password: values.password ?? process.env.TPS_ACCOUNT_PASSWORD,
  });
  if (!parsed.success) {
    throw new Error(
      parsed.error.issues.map((i) => `${String(i.path[0])}: ${i.message}`).join('\n'),
    );
  }
  return parsed.data;
}

/** Calls an account-level operation of a running relay. */
export async function callRelay(
  values: { 'base-url'?: string; username?: string; password?: string },
  operation: string,
  body: object,
): Promise<unknown> {
  const { baseUrl, username, password } = relayAccess(values);
  const response = await fetch(`${baseUrl.replace(/\/$/, '')}/v1${operation}`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`,
      'content-type': 'application/json',
    },
    body: JSON.stringify(body),
  });
  const answer: unknown = await response.json();
  if (!response.ok) {
    throw new Error(`the relay answered ${response.status}: ${JSON.stringify(answer)}`);
  }
  return answer;
}

export async function runSimulator(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { ...accessOptions, 'reader-protocol': { type: 'string' } },
    allowPositionals: true,
  });
  if (values.help || positionals[0] !== 'create') {
    process.stdout.write(SIMULATOR_USAGE);
    if (!values.help) process.exitCode = 2;
    return;
  }
  const protocol = values['reader-protocol'];
  if (protocol !== undefined && !ReaderProtocol.safeParse(protocol).success) {
    throw new Error('--reader-protocol must be native or zvt');
  }
  const issued = SimulatorCreateResponse.parse(
    await callRelay(
      values,
      '/simulator/create',
      protocol !== undefined ? { reader_protocol: protocol } : {},
    ),
  );
  if (values.json) {
    process.stdout.write(`${JSON.stringify(issued)}\n`);
  } else {
    process.stdout.write(
      `Simulated terminal ${issued.terminal_id}\n  username ${issued.username}\n  password ${issued.password}\n(the password is shown this once)\n`,
    );
  }
}

export async function runTerminal(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      ...accessOptions,
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
  });
  if (values.help || positionals[0] !== 'create') {
    process.stdout.write(TERMINAL_USAGE);
    if (!values.help) process.exitCode = 2;
    return;
  }
  const out = values.out;
  if (!out) throw new Error('--out FILE is needed: the agent config is written there');
  if (fs.existsSync(out)) throw new Error(`${out} exists; choose a new file`);
  // Checked before the terminal is registered: a refused option must not leave one behind.
  const reader = readerSection(values);
  const tcp = values['printer-tcp'] ? /^([^:]+):(\d+)$/.exec(values['printer-tcp']) : undefined;
  if (values['printer-tcp'] && !tcp) throw new Error('--printer-tcp must be HOST:PORT');
  const printer = tcp
    ? { type: 'tcp', host: tcp[1], port: Number(tcp[2]) }
    : values['printer-serial']
      ? { type: 'serial', path: values['printer-serial'] }
      : { type: 'none' };

  const issued = TerminalCreateResponse.parse(
    await callRelay(values, '/terminal/create', {
      printer: printer.type !== 'none',
      battery: values.battery ?? false,
    }),
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

export const CREDENTIAL_USAGE = `Usage: tps credential revoke|rotate USERNAME [--agent] [options]

Revokes or rotates one of the account's credentials on a running relay; every relay on
the same store stops accepting the old secret at once.

  revoke USERNAME   the credential no longer signs in; an agent's live session ends
  rotate USERNAME   a new secret replaces the old (printed this once): a terminal's POS
                    credential, or with --agent its agent's broker credential (write the
                    new one into the agent config's broker.password)
  --agent           USERNAME is a terminal id: its agent's broker credential
  --json            print the relay's answer as JSON
  --base-url, --username, --password   as for 'tps simulator create'

With an external broker, write its files again afterwards ('tps broker mosquitto', then
reload Mosquitto; or 'tps broker emqx' and the import) (docs/broker.md): the relay ends
sessions only at its embedded broker.
`;

export async function runCredential(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { ...accessOptions, agent: { type: 'boolean' } },
    allowPositionals: true,
  });
  const [action, username] = positionals;
  if (values.help || (action !== 'revoke' && action !== 'rotate') || !username) {
    process.stdout.write(CREDENTIAL_USAGE);
    if (!values.help) process.exitCode = 2;
    return;
  }
  const body = { type: values.agent ? 'AGENT' : 'API', username };
  const answer = await callRelay(values, `/credential/${action}`, body);
  if (values.json) {
    process.stdout.write(`${JSON.stringify(answer)}\n`);
    return;
  }
  if (action === 'revoke') {
    const { credential } = CredentialRevokeResponse.parse(answer);
    process.stdout.write(`Credential ${credential.username} revoked.\n`);
    return;
  }
  const { credential } = CredentialRotateResponse.parse(answer);
  process.stdout.write(
    `Credential ${credential.username} rotated; the old secret no longer signs in.\n` +
      `  password ${credential.password}\n(shown this once${
        credential.type === 'AGENT' ? "; write it into the agent config's broker.password" : ''
      })\n`,
  );
}
