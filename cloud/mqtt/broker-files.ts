/**
 * What an external broker needs to hold agents to the embedded broker's rules (acl.ts):
 * the credentials (each agent's stored `$7$` hash, the relay's own user) and the access
 * rules, as Mosquitto's password and ACL files and as an EMQX user import and ACL file.
 * docs/broker.md says how to use them.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { TOPIC_ROOT, agentClientId } from '../../protocol/index.js';
import { AGENT_PUBLISHES, AGENT_SUBSCRIBES } from './acl.js';

/** What precedes the terminal id in an agent's client id (protocol/mqtt.ts). */
const AGENT_CLIENT_ID_PREFIX = agentClientId('');

/** The relay's username at an external broker when TPS_MQTT_USERNAME does not say. */
export const DEFAULT_RELAY_USERNAME = 'tps-relay';

/** What the relay may read and write: every topic of version 1 of the link (TOPIC_ROOT and below). */
const RELAY_TOPICS = 'tps/v1/#';

/** Usernames that are safe in every file written here: no separators, quotes or wildcards. */
const SAFE_USERNAME = /^[A-Za-z0-9._@-]{1,64}$/;

export function checkRelayUsername(username: string): void {
  if (!SAFE_USERNAME.test(username)) {
    throw new Error(
      `the relay username '${username}' must be 1-64 letters, digits or . _ @ - (it is written into broker files)`,
    );
  }
}

export interface BrokerUser {
  username: string;
  /** A `$7$` hash (mosquitto-hash.ts). */
  hash: string;
}

/** Mosquitto's password file: `username:hash` lines, as mosquitto_passwd writes them. */
export function mosquittoPasswordFile(users: BrokerUser[]): string {
  return users.map((u) => `${u.username}:${u.hash}\n`).join('');
}

/**
 * Mosquitto's ACL file. `pattern` lines apply to every user, `%u` being the username (an
 * agent's terminal id); Mosquitto checks a `$share/<group>/…` subscription against the
 * filter after the prefix, so the relay's `tps/v1/#` covers its shared subscriptions.
 */
export function mosquittoAclFile(relayUsername: string): string {
  const own = (kind: string) => `${TOPIC_ROOT}/%u/${kind}`;
  return [
    '# Written by `tps broker mosquitto` from cloud/mqtt/acl.ts; it is replaced on every run.',
    '# Each agent signs in with its terminal id (%u) and reaches only its own topics, in its',
    '# own direction: it publishes acknowledgements, reports, presence and update status, and',
    '# reads commands, report acknowledgements and update orders. What no line allows is refused.',
    ...[...AGENT_PUBLISHES].map((kind) => `pattern write ${own(kind)}`),
    ...[...AGENT_SUBSCRIBES].map((kind) => `pattern read ${own(kind)}`),
    '',
    '# The relay reaches every terminal, also through $share/<group>/ subscriptions.',
    `user ${relayUsername}`,
    `topic readwrite ${RELAY_TOPICS}`,
    '',
  ].join('\n');
}

/**
 * The largest packet an external broker takes. Its setting covers every client, the
 * relay too, whose largest message is a print command (a 4 MiB base64 job, joined from
 * its fragments): so 5 MiB, not the embedded listener's 64 KiB for agents. It still ends
 * a connection that declares 256 MB.
 */
export const EXTERNAL_MAX_PACKET_BYTES = 5 * 1024 * 1024;
/** Connections the agents' listener of an external broker holds, as the embedded one. */
export const EXTERNAL_MAX_CONNECTIONS = 10_000;

/** A listener of an external broker: where agents connect, or where relays do. */
export interface BrokerListener {
  port: number;
  /** The address it binds; the relays' should be one agents cannot reach. */
  host?: string;
  tls?: { certfile: string; keyfile: string };
}

/**
 * mosquitto.conf for the files written here: two listeners. Agents connect to theirs,
 * where `use_username_as_clientid` makes every client's session id its username (its
 * terminal id): an agent's credential can never open, end or take over another
 * terminal's session, whatever client id it sends. (Mosquitto's ACL patterns cannot tie
 * the client id to the username: `%c` and `%u` each stand alone in a topic, and a rule
 * on `%c` would hand a terminal's topics to whoever names its client id. So topics stay
 * on `%u`, the authenticated username, and the session on the listener's rule.) Relays
 * connect to their own listener, which keeps their client ids (several relays share one
 * username) and must be reachable by the relays only.
 */
export function mosquittoConf(
  files: { passwordFile: string; aclFile: string },
  listeners: { agents: BrokerListener; relays: BrokerListener },
): string {
  const listener = (l: BrokerListener) => [
    `listener ${l.port}${l.host ? ` ${l.host}` : ''}`,
    ...(l.tls ? [`certfile ${l.tls.certfile}`, `keyfile ${l.tls.keyfile}`] : []),
  ];
  return [
    'per_listener_settings false',
    'allow_anonymous false',
    `password_file ${files.passwordFile}`,
    `acl_file ${files.aclFile}`,
    'set_tcp_nodelay true',
    `max_packet_size ${EXTERNAL_MAX_PACKET_BYTES}`,
    '',
    '# Agents: the session of a connection is its username (the terminal id).',
    ...listener(listeners.agents),
    'use_username_as_clientid true',
    `max_connections ${EXTERNAL_MAX_CONNECTIONS}`,
    '',
    '# Relays only: an address agents cannot reach.',
    ...listener(listeners.relays),
    '',
  ].join('\n');
}

/**
 * EMQX's configuration for the files written here: agents on a listener of their own
 * zone, where `mqtt.clientid_override` makes every session `agent-<username>` (EMQX
 * 5.8.3 or later): an agent's credential never reaches another terminal's session. The
 * relays keep the default zone, and their own client ids, on a listener agents cannot
 * reach.
 */
export function emqxConf(
  files: { aclFile: string },
  listeners: { agents: BrokerListener; relays: BrokerListener },
): string {
  const { agents, relays } = listeners;
  const bind = (l: BrokerListener) => `"${l.host ?? '0.0.0.0'}:${l.port}"`;
  return [
    'authentication = [{',
    '  mechanism = password_based',
    '  backend = built_in_database',
    '  user_id_type = username',
    '  password_hash_algorithm { name = pbkdf2, mac_fun = sha512, iterations = 101, dk_length = 64 }',
    '}]',
    'authorization {',
    '  no_match = deny',
    '  deny_action = ignore',
    `  sources = [{ type = file, enable = true, path = "${files.aclFile}" }]`,
    '}',
    '',
    `mqtt.max_packet_size = ${EXTERNAL_MAX_PACKET_BYTES / 1024 / 1024}MB`,
    '',
    '# Agents: the session of a connection is agent-<username> (the terminal id).',
    'zones.agents.mqtt {',
    `  clientid_override = "concat(['${AGENT_CLIENT_ID_PREFIX}', username])"`,
    '}',
    `listeners.${agents.tls ? 'ssl' : 'tcp'}.agents {`,
    `  bind = ${bind(agents)}`,
    '  zone = agents',
    `  max_connections = ${EXTERNAL_MAX_CONNECTIONS}`,
    ...(agents.tls
      ? [`  ssl_options { certfile = "${agents.tls.certfile}", keyfile = "${agents.tls.keyfile}" }`]
      : []),
    '}',
    '',
    '# Relays only: an address agents cannot reach.',
    'listeners.tcp.default {',
    `  bind = ${bind(relays)}`,
    '}',
    '',
  ].join('\n');
}

/**
 * EMQX's file authorizer (acl.conf, Erlang terms): the same rules with `${username}`
 * placeholders. EMQX checks a `$share/<group>/…` subscription against the filter after
 * the prefix, as Mosquitto does. Use it with `authorization.no_match = deny`.
 */
export function emqxAclFile(relayUsername: string): string {
  const own = (kinds: ReadonlySet<string>) =>
    [...kinds].map((kind) => `"${TOPIC_ROOT}/\${username}/${kind}"`).join(', ');
  return [
    '%% Written by `tps broker emqx` from cloud/mqtt/acl.ts; it is replaced on every run.',
    '%% The relay reaches every terminal, also through $share/<group>/ subscriptions.',
    `{allow, {username, "${relayUsername}"}, all, ["${RELAY_TOPICS}"]}.`,
    '%% Each agent signs in with its terminal id and reaches only its own topics, in its own direction.',
    `{allow, all, publish, [${own(AGENT_PUBLISHES)}]}.`,
    `{allow, all, subscribe, [${own(AGENT_SUBSCRIBES)}]}.`,
    '{deny, all}.',
    '',
  ].join('\n');
}

/**
 * Writes a file whole or not at all: a temporary file in the same directory (mode 0600),
 * flushed to disk, then renamed over the target, so a broker reloading at any moment reads
 * the old file or the new one. The new file keeps the owner and group of the one it
 * replaces where this process may set them (as root, or as that owner); answers false
 * when it could not, so the caller can say the broker may no longer read it.
 */
export function writeFileAtomic(file: string, contents: string): boolean {
  const dir = path.dirname(file);
  const temp = path.join(
    dir,
    `.${path.basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`,
  );
  const previous = fs.existsSync(file) ? fs.statSync(file) : undefined;
  let ownerKept = true;
  const fd = fs.openSync(temp, 'wx', 0o600);
  try {
    fs.fchmodSync(fd, 0o600);
    if (previous && (previous.uid !== process.getuid?.() || previous.gid !== process.getgid?.())) {
      try {
        fs.fchownSync(fd, previous.uid, previous.gid);
      } catch {
        ownerKept = false;
      }
    }
    fs.writeFileSync(fd, contents);
    fs.fsyncSync(fd);
  } catch (error) {
    fs.closeSync(fd);
    fs.rmSync(temp, { force: true });
    throw error;
  }
  fs.closeSync(fd);
  try {
    fs.renameSync(temp, file);
  } catch (error) {
    fs.rmSync(temp, { force: true });
    throw error;
  }
  // The rename itself reaches the disk with the directory.
  const dirFd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(dirFd);
  } finally {
    fs.closeSync(dirFd);
  }
  return ownerKept;
}
