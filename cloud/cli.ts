/** `tps cloud` and `tps simulator create`. */
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { SimulatorCreateResponse } from '../protocol/index.js';
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
  process.stderr.write(banner(relay));
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

function banner(relay: Relay): string {
  const lines = [
    '',
    `Terminal payment relay listening on ${relay.baseUrl}/v1/ (and /v0/)`,
    `OpenAPI: ${relay.baseUrl}/v1/openapi.json`,
  ];
  const account = relay.bootstrap.accountCredential;
  if (account) {
    lines.push(
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
    lines.push(
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
  lines.push('', 'More simulated terminals: tps simulator create --help', '');
  return lines.join('\n');
}

export const SIMULATOR_USAGE = `Usage: tps simulator create [--json] [--base-url URL] [--username U] [--password P]

Creates a simulated terminal on a running relay and prints its terminal id, username
and password (shown this once). The account credential comes from the flags or from
TPS_ACCOUNT_USERNAME / TPS_ACCOUNT_PASSWORD; the relay from --base-url or TPS_BASE_URL
(default http://127.0.0.1:8080/pos).
`;

const SimulatorCreateEnv = z.object({
  baseUrl: z.url().default('http://127.0.0.1:8080/pos'),
  username: z
    .string({ error: 'an account username is needed (--username or TPS_ACCOUNT_USERNAME)' })
    .min(1),
  password: z
    .string({ error: 'an account password is needed (--password or TPS_ACCOUNT_PASSWORD)' })
    .min(1),
});

export async function runSimulator(argv: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      json: { type: 'boolean' },
      'base-url': { type: 'string' },
      username: { type: 'string' },
      password: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: true,
  });
  if (values.help || positionals[0] !== 'create') {
    process.stdout.write(SIMULATOR_USAGE);
    if (!values.help) process.exitCode = 2;
    return;
  }
  const parsed = SimulatorCreateEnv.safeParse({
    baseUrl: values['base-url'] ?? process.env.TPS_BASE_URL,
    username: values.username ?? process.env.TPS_ACCOUNT_USERNAME,
    password: values.password ?? process.env.TPS_ACCOUNT_PASSWORD,
  });
  if (!parsed.success) {
    throw new Error(
      parsed.error.issues.map((i) => `${String(i.path[0])}: ${i.message}`).join('\n'),
    );
  }
  const { baseUrl, username, password } = parsed.data;
  const response = await fetch(`${baseUrl.replace(/\/$/, '')}/v1/simulator/create`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`,
      'content-type': 'application/json',
    },
    body: '{}',
  });
  const body: unknown = await response.json();
  if (!response.ok) {
    throw new Error(`the relay answered ${response.status}: ${JSON.stringify(body)}`);
  }
  const issued = SimulatorCreateResponse.parse(body);
  if (values.json) {
    process.stdout.write(`${JSON.stringify(issued)}\n`);
  } else {
    process.stdout.write(
      `Simulated terminal ${issued.terminal_id}\n  username ${issued.username}\n  password ${issued.password}\n(the password is shown this once)\n`,
    );
  }
}
