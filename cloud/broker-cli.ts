/**
 * `tps broker mosquitto|emqx`: an external broker's credentials and access rules, made
 * from the relay's store (docs/broker.md).
 */
import fs from 'node:fs';
import path from 'node:path';
import { UsageError, parseCommandLine } from '../common/cli.js';
import { emqxUserRecord, hashForBroker, isBrokerHash } from './accounts/mosquitto-hash.js';
import { loadCloudConfig } from './config-settings.js';
import {
  DEFAULT_RELAY_USERNAME,
  checkRelayUsername,
  emqxAclFile,
  emqxConf,
  mosquittoAclFile,
  mosquittoConf,
  mosquittoPasswordFile,
  writeFileAtomic,
  type BrokerUser,
} from './mqtt/broker-files.js';
import type { TerminalRecord } from './store/records.js';
import { openBackend } from './store/open.js';
import type { Store } from './store/store.js';

export const BROKER_USAGE = `Usage: tps broker mosquitto --out DIR [options]
       tps broker emqx --out DIR [options]

Writes an external broker's credentials and access rules from the relay's store: every
terminal agent's credential (username = terminal id, the stored hash, never a secret)
and the relay's own user, with rules that hold each agent to its own terminal's topics.

  mosquitto   DIR/passwd (a Mosquitto password file) and DIR/acl (an ACL file)
  emqx        DIR/users.json (EMQX built-in database import, type hash) and DIR/acl.conf

Files are written whole (a temporary file renamed over the old one), mode 0600. Run it
again after every 'tps terminal create', then reload the broker (it prints how).

  --out DIR               where to write the files (created if missing)
  --relay-username U      the relay's username at the broker
                          (default TPS_MQTT_USERNAME, else ${DEFAULT_RELAY_USERNAME})
  --relay-password P      the relay's password at the broker (default TPS_MQTT_PASSWORD;
                          prefer the variable: a flag is visible to other users in ps)
  --data-dir DIR          the relay's data directory (default TPS_DATA_DIR, else ./data)
  --json                  print what was written as JSON: {broker, files: [{path, kind}],
                          agents, relay_username, left_out: [terminal ids]}
  -h, --help              this text
`;

interface AgentCredentials {
  /** Agents whose stored hash the broker reads. */
  users: BrokerUser[];
  /** Agents whose hash was made before the `$7$` format: no broker file can carry them. */
  older: TerminalRecord[];
}

async function agentCredentials(store: Store): Promise<AgentCredentials> {
  const users: BrokerUser[] = [];
  const older: TerminalRecord[] = [];
  // Simulated terminals played inside the relay (TPS_SIMULATOR_MODE=in-process) have none.
  for (const terminal of await store.listTerminals()) {
    const hash = await store.findAgentCredential(terminal.id);
    if (hash === undefined) continue;
    if (!isBrokerHash(hash)) older.push(terminal);
    else users.push({ username: terminal.id, hash });
  }
  return { users, older };
}

function olderWarning(older: TerminalRecord[], broker: string): string {
  if (older.length === 0) return '';
  const simulated = older.filter((t) => t.kind === 'SIMULATOR');
  const real = older.filter((t) => t.kind !== 'SIMULATOR');
  const lines = [
    '',
    `Warning: ${older.length} terminal(s) left out: their agent credential was stored before the`,
    `Mosquitto hash format, so ${broker} cannot check it and these agents cannot sign in there:`,
    ...older.map((t) => `  ${t.id}${t.kind === 'SIMULATOR' ? ' (simulated)' : ''}`),
  ];
  if (simulated.length > 0) {
    lines.push(
      'A simulated terminal gets a credential in the new format when a relay next hosts it:',
      'restart the relay, then run this command again.',
    );
  }
  if (real.length > 0) {
    lines.push(
      'No command issues a new agent secret for an existing terminal. Keep these terminals on',
      'the embedded broker (their credential still works there), or register a replacement with',
      "'tps terminal create' (a new terminal id; install its agent config and move the POS to",
      'it).',
    );
  }
  return `${lines.join('\n')}\n`;
}

export async function runBroker(argv: string[]): Promise<void> {
  const { values, positionals } = parseCommandLine(
    {
      args: argv,
      options: {
        out: { type: 'string' },
        'relay-username': { type: 'string' },
        'relay-password': { type: 'string' },
        'data-dir': { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
    },
    BROKER_USAGE,
  );
  if (values.help) return void process.stdout.write(BROKER_USAGE);
  const [broker, ...extra] = positionals;
  if (broker !== 'mosquitto' && broker !== 'emqx') {
    throw new UsageError(
      broker === undefined ? 'name the broker: mosquitto or emqx' : `unknown broker '${broker}'`,
      BROKER_USAGE,
    );
  }
  if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'`, BROKER_USAGE);
  if (!values.out) {
    throw new UsageError('--out DIR is needed: the broker files are written there', BROKER_USAGE);
  }
  const config = loadCloudConfig({ 'data-dir': values['data-dir'] }, process.env);
  const relayUsername = values['relay-username'] ?? config.mqttUsername ?? DEFAULT_RELAY_USERNAME;
  const relayPassword = values['relay-password'] ?? config.mqttPassword;
  try {
    checkRelayUsername(relayUsername);
  } catch (error) {
    throw new UsageError((error as Error).message, BROKER_USAGE);
  }
  if (!relayPassword) {
    throw new UsageError(
      "the relay's password at the broker is needed: TPS_MQTT_PASSWORD (as 'tps cloud' gets it) or --relay-password",
      BROKER_USAGE,
    );
  }

  const backend = await openBackend(config, { mustExist: true });
  let credentials: AgentCredentials;
  try {
    credentials = await agentCredentials(backend.store);
  } finally {
    await backend.close();
  }
  const { users, older } = credentials;
  if (users.some((u) => u.username === relayUsername)) {
    throw new Error(`the relay username '${relayUsername}' is also a terminal id; choose another`);
  }
  const relay: BrokerUser = { username: relayUsername, hash: hashForBroker(relayPassword) };

  const out = path.resolve(values.out);
  fs.mkdirSync(out, { recursive: true });
  const written: Array<[string, string]> =
    broker === 'mosquitto'
      ? [
          [path.join(out, 'passwd'), mosquittoPasswordFile([relay, ...users])],
          [path.join(out, 'acl'), mosquittoAclFile(relayUsername)],
        ]
      : [
          [path.join(out, 'users.json'), emqxUsersFile([relay, ...users])],
          [path.join(out, 'acl.conf'), emqxAclFile(relayUsername)],
        ];
  const ownerLost = written.filter(([file, contents]) => !writeFileAtomic(file, contents));

  const [credentialsFile, aclFile] = written.map(([file]) => file) as [string, string];
  if (values.json) {
    const files = [
      { path: credentialsFile, kind: 'credentials' },
      { path: aclFile, kind: 'acl' },
    ];
    process.stdout.write(
      `${JSON.stringify({ broker, files, agents: users.length, relay_username: relayUsername, left_out: older.map((t) => t.id) })}\n`,
    );
  } else {
    const summary = `Wrote ${credentialsFile} (${users.length} agent(s) and the relay user ${relayUsername}) and ${aclFile}, mode 0600.\n`;
    process.stdout.write(
      summary +
        (broker === 'mosquitto'
          ? mosquittoHints(credentialsFile, aclFile)
          : emqxHints(credentialsFile, aclFile)),
    );
  }
  for (const [file] of ownerLost) {
    process.stderr.write(
      `Warning: ${file} replaced a file of another owner, which this user cannot keep: it now belongs to this user; make sure the broker can still read it.\n`,
    );
  }
  process.stderr.write(olderWarning(older, broker === 'mosquitto' ? 'Mosquitto' : 'EMQX'));
}

function emqxUsersFile(users: BrokerUser[]): string {
  const records = users.map((u) => {
    const record = emqxUserRecord(u.username, u.hash);
    // Every hash made by hashForBroker converts; one that does not was made elsewhere.
    if (!record) throw new Error(`the stored hash of ${u.username} cannot be given to EMQX`);
    return record;
  });
  return `${JSON.stringify(records, null, 2)}\n`;
}

/** The listeners the printed configuration shows; the operator adapts ports and files. */
const EXAMPLE_LISTENERS = {
  agents: {
    port: 8883,
    tls: { certfile: '/etc/broker/certs/broker.crt', keyfile: '/etc/broker/certs/broker.key' },
  },
  relays: { port: 1883, host: '127.0.0.1' },
};

const indent = (text: string) =>
  text
    .trimEnd()
    .split('\n')
    .map((line) => (line ? `  ${line}` : ''))
    .join('\n');

function mosquittoHints(passwd: string, acl: string): string {
  return `
mosquitto.conf (agents on their own listener, where each session is its username, so
no agent can take over another terminal's; relays on a listener only they reach; adapt
ports, addresses and certificates):

${indent(mosquittoConf({ passwordFile: passwd, aclFile: acl }, EXAMPLE_LISTENERS))}

Mosquitto reads both files as its own user (usually 'mosquitto'): the first time, give
them to it (chown mosquitto: ${passwd} ${acl}); later runs keep the owner.
SIGHUP makes a running Mosquitto read both files again:

  kill -HUP <pid of mosquitto>      # or: systemctl reload mosquitto
`;
}

function emqxHints(users: string, acl: string): string {
  return `
emqx.conf (EMQX 5.8.3 or later; agents on their own listener and zone, where each
session is agent-<username>, so no agent can take over another terminal's; relays on a
listener only they reach; adapt ports, addresses and certificates):

${indent(emqxConf({ aclFile: acl }, EXAMPLE_LISTENERS))}

Import the users (again after every run; existing users are replaced):

  curl -u KEY:SECRET -F filename=@${users} \\
    'http://EMQX:18083/api/v5/authentication/password_based%3Abuilt_in_database/import_users?type=hash'

acl.conf names no terminal, so it changes only with the relay username. EMQX reads it
at start; after a change, restart EMQX or paste it into the file authorizer (Dashboard:
Access Control, Authorization).
`;
}
