/**
 * The MQTT broker inside the relay process (aedes), listening for agents. Agents sign
 * in with their terminal id and agent secret, checked against the stored hash an external
 * Mosquitto reads too (`tps broker mosquitto`); the relay with a secret made for this
 * process. Nagle is off on every socket: with it, each QoS 1 round trip waits for the
 * peer's delayed ACK (≈ 40-90 ms instead of ≈ 0.1 ms).
 */
import net from 'node:net';
import { Duplex, PassThrough } from 'node:stream';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { Aedes, type AuthenticateError, type Client } from 'aedes';
import type { Logger } from 'pino';
import { verifyAgentSecret } from '../accounts/mosquitto-hash.js';
import { VerifiedSecretCache } from '../accounts/secrets.js';
import type { Store } from '../store/store.js';
import { mayPublish, maySubscribe, type MqttIdentity } from './acl.js';

export interface EmbeddedBroker {
  /** The credential the relay's own link uses. */
  relayCredential: { username: string; password: string };
  /**
   * A connection to the broker inside the process. The relay's link connects this way
   * and subscribes before the listener opens, so no agent can publish a report into a
   * broker where the relay is not yet listening (after a restart, the embedded broker
   * starts with no sessions at all).
   */
  connectInProcess(): Duplex;
  /** Opens the listener for agents; answers its mqtt://host:port. */
  listen(host: string, port: number): Promise<{ url: string; port: number }>;
  close(): Promise<void>;
}

export const RELAY_USERNAME = 'tps-relay';

function authError(message: string): AuthenticateError {
  return Object.assign(new Error(message), { returnCode: 4 }) as AuthenticateError;
}

export async function startEmbeddedBroker(options: {
  store: Store;
  logger: Logger;
}): Promise<EmbeddedBroker> {
  const { store, logger } = options;
  const relayPassword = randomBytes(24).toString('base64url');
  const identities = new WeakMap<Client, MqttIdentity>();
  // Agents' hashes are Mosquitto's `$7$` (or, made before it, salted SHA-256).
  const secrets = new VerifiedSecretCache(verifyAgentSecret);

  const broker = await Aedes.createBroker({
    authenticate: (client, username, password, done) => {
      const secret = password?.toString('utf8') ?? '';
      if (username === RELAY_USERNAME) {
        const ok =
          secret.length === relayPassword.length &&
          timingSafeEqual(Buffer.from(secret), Buffer.from(relayPassword));
        if (ok) identities.set(client, { role: 'relay' });
        return ok ? done(null, true) : done(authError('bad relay credential'), false);
      }
      if (!username) return done(authError('username required'), false);
      store
        .findAgentCredential(username)
        .then(async (hash) => {
          if (!hash || !(await secrets.verify(username, secret, hash))) {
            logger.warn({ terminalId: username }, 'agent sign-in refused');
            return done(authError('bad agent credential'), false);
          }
          identities.set(client, { role: 'agent', terminalId: username });
          done(null, true);
        })
        .catch(() => done(authError('credential check failed'), false));
    },
    authorizePublish: (client, packet, done) => {
      const identity = client ? identities.get(client) : { role: 'relay' as const };
      if (identity && mayPublish(identity, packet.topic)) return done(null);
      logger.warn({ topic: packet.topic, clientId: client?.id }, 'publish refused');
      done(new Error('not authorized'));
    },
    authorizeSubscribe: (client, subscription, done) => {
      const identity = identities.get(client);
      if (identity && maySubscribe(identity, subscription.topic)) return done(null, subscription);
      logger.warn({ topic: subscription.topic, clientId: client.id }, 'subscribe refused');
      done(null, null);
    },
  });

  const server = net.createServer({ noDelay: true }, (socket) => broker.handle(socket));

  return {
    relayCredential: { username: RELAY_USERNAME, password: relayPassword },
    connectInProcess() {
      const toBroker = new PassThrough();
      const toClient = new PassThrough();
      broker.handle(Duplex.from({ readable: toBroker, writable: toClient }));
      return Duplex.from({ readable: toClient, writable: toBroker });
    },
    async listen(host, port) {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => resolve());
      });
      const bound = (server.address() as net.AddressInfo).port;
      return { url: `mqtt://${host.includes(':') ? `[${host}]` : host}:${bound}`, port: bound };
    },
    async close() {
      // The broker ends every client connection, which lets the listener close.
      const closed = server.listening
        ? new Promise<void>((resolve) => server.close(() => resolve()))
        : Promise.resolve();
      await new Promise<void>((resolve) => broker.close(() => resolve()));
      await closed;
    },
  };
}
