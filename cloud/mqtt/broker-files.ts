/**
 * What an external broker needs to hold agents to the embedded broker's rules (acl.ts):
 * the credentials (each agent's stored `$7$` hash, the relay's own user) and the access
 * rules, as Mosquitto's password and ACL files and as an EMQX user import and ACL file.
 * docs/broker.md says how to use them.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { TOPIC_ROOT } from '../../protocol/index.js';
import { AGENT_PUBLISHES, AGENT_SUBSCRIBES } from './acl.js';

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
    '# own direction: it publishes acknowledgements, reports and presence, and reads commands',
    '# and report acknowledgements. What no line allows is refused.',
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
