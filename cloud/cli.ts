/** `tps cloud`, and the account's commands on a running relay: simulator, credential. */
import fs from 'node:fs';
import path from 'node:path';
import { UsageError, parseCommandLine } from '../common/cli.js';
import { LocalApiListen } from '../protocol/local-api.js';
import {
  AccountCredentialAddResponse,
  ReaderProtocol,
  CredentialRevokeResponse,
  CredentialRotateResponse,
  SimulatorCreateResponse,
} from '../protocol/index.js';
import { CLOUD_SETTINGS, loadCloudConfig } from './config-settings.js';
import {
  accessOptions,
  actingHelp,
  actingAccount,
  actingOptions,
  callRelay,
  subcommand,
} from './relay-call.js';
import type { Relay } from './relay.js';

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
  const { values } = parseCommandLine(
    { args: argv, options: { ...cloudFlagOptions, help: { type: 'boolean', short: 'h' } } },
    CLOUD_USAGE,
  );
  if (values.help) {
    process.stdout.write(CLOUD_USAGE);
    return;
  }
  const config = loadCloudConfig(values, process.env);
  // Loaded here: the account's commands in this file need none of the relay.
  const { startRelay } = await import('./relay.js');
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
    // What a newcomer opens first.
    `Console: ${relay.baseUrl.replace(/\/pos$/, '')}/console/ (sign in with an account or terminal credential)`,
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
  const operator = relay.bootstrap.operatorCredential;
  if (operator) {
    secret.push(
      '',
      'Operator credential (shown this once; it creates, lists and disables merchant accounts):',
      `  username ${operator.username}`,
      `  password ${operator.password}`,
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
  shown.push(
    '',
    'More simulated terminals: tps simulator create --help',
    'Paying through the terminal on the shop network (local mode): tps simulator create --local-api 8443',
    '',
  );
  return { shown, secret };
}

export const SIMULATOR_USAGE = `Usage: tps simulator create [--reader-protocol native|zvt] [--local-api [HOST:]PORT] [--json] [--base-url URL] [--username U] [--password P]

Creates a simulated terminal on a running relay and prints its terminal id, username
and password (shown this once).

  --reader-protocol P     native (the default), or zvt: its agent drives an emulated
                          ZVT payment terminal
  --local-api [HOST:]PORT turns local mode on for it (its fleet setting local_api): its
                          agent serves the POS API over HTTPS on HOST (default
                          127.0.0.1) and PORT (1024-65535) with a certificate the relay
                          signs; 'tps pos local-trust' answers what to trust
  --json                  print {terminal_id, username, password} as JSON
  --base-url URL          the relay (default TPS_BASE_URL, else http://127.0.0.1:8080/pos)
  --username U            the account's API username (default TPS_ACCOUNT_USERNAME)
  --password P            its password (default TPS_ACCOUNT_PASSWORD; prefer the
                          variable: a flag is visible to other users in ps)
  -h, --help              this text
`;

export async function runSimulator(argv: string[]): Promise<void> {
  const { values, positionals } = parseCommandLine(
    {
      args: argv,
      options: {
        ...accessOptions,
        'reader-protocol': { type: 'string' },
        'local-api': { type: 'string' },
      },
      allowPositionals: true,
    },
    SIMULATOR_USAGE,
  );
  if (values.help) return void process.stdout.write(SIMULATOR_USAGE);
  subcommand(positionals, ['create'], SIMULATOR_USAGE);
  const protocol = values['reader-protocol'];
  if (protocol !== undefined && !ReaderProtocol.safeParse(protocol).success) {
    throw new UsageError('--reader-protocol must be native or zvt', SIMULATOR_USAGE);
  }
  const listen = values['local-api'] === undefined ? undefined : localListen(values['local-api']);
  const issued = SimulatorCreateResponse.parse(
    await callRelay(
      values,
      '/simulator/create',
      protocol !== undefined ? { reader_protocol: protocol } : {},
      SIMULATOR_USAGE,
    ),
  );
  // The field's path: the fleet setting, which brings the agent its certificate and the
  // POS credential's verifier over its MQTT link.
  if (listen) {
    await callRelay(
      values,
      '/fleet/config/set',
      {
        scope: { terminal_id: issued.terminal_id },
        config: { local_api: { enabled: true, listen } },
      },
      SIMULATOR_USAGE,
    );
  }
  if (values.json) {
    process.stdout.write(`${JSON.stringify(issued)}\n`);
    return;
  }
  process.stdout.write(
    `Simulated terminal ${issued.terminal_id}\n  username ${issued.username}\n  password ${issued.password}\n(the password is shown this once)\n`,
  );
  if (listen) {
    const host = listen.host.includes(':') ? `[${listen.host}]` : listen.host;
    const localUrl = `https://${host}:${listen.port}/pos`;
    process.stdout.write(
      `Local API: ${localUrl} (once the relay signed its certificate); to pay through it:\n` +
        `  tps pos local-trust --terminal ${issued.terminal_id} --out tps-ca.pem\n` +
        `  tps pos purchase --terminal ${issued.terminal_id} --local ${localUrl} --local-ca tps-ca.pem --local-first ...\n`,
    );
  }
}

/** `[HOST:]PORT` of --local-api, checked as the fleet setting checks it. */
function localListen(text: string): { host: string; port: number } {
  const at = text.lastIndexOf(':');
  const host = at < 0 ? '127.0.0.1' : text.slice(0, at).replace(/^\[(.*)\]$/, '$1');
  const parsed = LocalApiListen.safeParse({ host, port: Number(text.slice(at + 1)) });
  if (!parsed.success || parsed.data.port === undefined || parsed.data.host === undefined) {
    throw new UsageError(
      '--local-api must be [HOST:]PORT, an IP address and a port 1024-65535',
      SIMULATOR_USAGE,
    );
  }
  return { host: parsed.data.host, port: parsed.data.port };
}

export const CREDENTIAL_USAGE = `Usage: tps credential revoke|rotate USERNAME [--agent] [options]
       tps credential add [options]

Adds, revokes or rotates one of the account's credentials on a running relay; every relay
on the same store stops accepting an old secret at once.

  add               a new account credential of the account (printed this once)
  revoke USERNAME   the credential no longer signs in; an agent's live session ends
  rotate USERNAME   a new secret replaces the old (printed this once): an account
                    credential, a terminal's POS credential, or with --agent its agent's
                    broker credential (write the new one into the agent config's
                    broker.password)
  --agent           USERNAME is a terminal id: its agent's broker credential
${actingHelp(20)}  --json            print the relay's answer as JSON
  --base-url, --username, --password   as for 'tps simulator create'
  -h, --help        this text

With an external broker, write its files again afterwards ('tps broker mosquitto', then
reload Mosquitto; or 'tps broker emqx' and the import) (docs/broker.md): the relay ends
sessions only at its embedded broker.
`;

export async function runCredential(argv: string[]): Promise<void> {
  const { values, positionals } = parseCommandLine(
    {
      args: argv,
      options: { ...accessOptions, ...actingOptions, agent: { type: 'boolean' } },
      allowPositionals: true,
    },
    CREDENTIAL_USAGE,
  );
  if (values.help) return void process.stdout.write(CREDENTIAL_USAGE);
  const [action, username, ...extra] = positionals;
  subcommand(action === undefined ? [] : [action], ['add', 'revoke', 'rotate'], CREDENTIAL_USAGE);
  const acting = actingAccount(values, CREDENTIAL_USAGE);
  if (action === 'add') {
    if (username !== undefined) {
      throw new UsageError(`unexpected argument '${username}'`, CREDENTIAL_USAGE);
    }
    if (values.agent) throw new UsageError('--agent is for revoke and rotate', CREDENTIAL_USAGE);
    const answer = await callRelay(
      values,
      '/account/credential/add',
      acting.named,
      CREDENTIAL_USAGE,
      acting.env,
    );
    if (values.json) return void process.stdout.write(`${JSON.stringify(answer)}\n`);
    const { credential } = AccountCredentialAddResponse.parse(answer);
    process.stdout.write(
      `Account credential added to ${credential.account_id} (shown this once):\n` +
        `  username ${credential.username}\n  password ${credential.password}\n`,
    );
    return;
  }
  if (!username) throw new UsageError(`${action} needs a USERNAME`, CREDENTIAL_USAGE);
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`, CREDENTIAL_USAGE);
  const body = { ...acting.named, type: values.agent ? 'AGENT' : 'API', username };
  const answer = await callRelay(
    values,
    `/credential/${action}`,
    body,
    CREDENTIAL_USAGE,
    acting.env,
  );
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
