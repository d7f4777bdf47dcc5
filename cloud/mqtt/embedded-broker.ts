/**
 * The MQTT broker inside the relay process (aedes), listening for agents. Agents sign
 * in with their terminal id and agent secret, checked against the stored hash an external
 * Mosquitto reads too (`tps broker mosquitto`); the relay with a secret made for this
 * process. With a certificate the listener speaks TLS (1.2 or later) only. Nagle is off
 * on every socket: with it, each QoS 1 round trip waits for the peer's delayed ACK
 * (≈ 40-90 ms instead of ≈ 0.1 ms).
 */
import net from 'node:net';
import tls from 'node:tls';
import { Duplex, PassThrough } from 'node:stream';
import { randomBytes } from 'node:crypto';
import { Aedes, type AedesPublishPacket, type AuthenticateError, type Client } from 'aedes';
import mqemitter from 'mqemitter';
import type { Logger } from 'pino';
import type { SignInFailure } from '../accounts/authenticator.js';
import { hashForBroker, verifyAgentSecret } from '../accounts/mosquitto-hash.js';
import { VerifiedSecretCache } from '../accounts/secrets.js';
import { sourceOf, type SignInThrottle } from '../../common/sign-in-throttle.js';
import type { Store } from '../store/store.js';
import { mayConnectAs, mayPublish, mayReceive, maySubscribe, type MqttIdentity } from './acl.js';
import { ConnectWatch, type ConnectOutcome } from './connect-watch.js';
import { MessageRate, limitPacketSize } from './listener-limits.js';
import { WarningLimiter } from '../../common/warning-limiter.js';
import type { BrokerChannel } from './mqtt-link.js';
import { retainedByTopicPersistence } from './retained-by-topic.js';

/**
 * Connections the kernel holds completed for the listener until the broker accepts them.
 * A fleet comes back all at once after a restart; Node's default (511) overflows, and an
 * agent whose handshake the kernel dropped waits out TCP's retransmission back-off (1 s,
 * 3 s, 7 s...) while the relay sits idle. Linux caps it at net.core.somaxconn.
 */
const ACCEPT_BACKLOG = 8192;

export interface EmbeddedBroker {
  /**
   * The relay's own link into the broker, without an MQTT client: the relay subscribes
   * through it before the listener opens, so no agent can publish a report into a broker
   * where the relay is not yet listening (after a restart, the embedded broker starts
   * with no sessions at all). Agents' messages a limit dropped are not handed on.
   */
  relayChannel(): BrokerChannel;
  /**
   * An MQTT connection to the broker inside the process, for the relay's hosted
   * simulators: no socket, and no TLS certificate to match (it names the public host).
   */
  connectInProcess(): Duplex;
  /** Opens the listener for agents; answers its mqtt://host:port, or mqtts:// with TLS. */
  listen(host: string, port: number): Promise<{ url: string; port: number }>;
  /** Agents signed in now. */
  connectedAgents(): number;
  /** Ends the sessions of a terminal's agent: its credential was revoked or rotated. */
  disconnectAgent(terminalId: string): void;
  /** Ends every agent session whose credential changed since it signed in (notices missed). */
  recheckAgents(): Promise<void>;
  close(): Promise<void>;
}

/** CONNACK return codes of MQTT 3.1.1 the broker refuses with. */
const IDENTIFIER_REJECTED = 2;
const SERVER_UNAVAILABLE = 3;
const BAD_CREDENTIAL = 4;

function authError(message: string, returnCode = BAD_CREDENTIAL): AuthenticateError {
  return Object.assign(new Error(message), { returnCode }) as AuthenticateError;
}

/** Where a connection comes from, for the sign-in limits; the relay's own has no address. */
function sourceOfClient(client: Client): string {
  const address = (client.conn as { remoteAddress?: string } | undefined)?.remoteAddress;
  return address ? sourceOf(address) : 'in-process';
}

/** The listener's bounds (TPS_MQTT_*, docs/security.md); the defaults are the documented ones. */
export interface ListenerLimits {
  maxPacketBytes: number;
  connectTimeoutMs: number;
  maxConnections: number;
  /** For agents' messages; the relay's own (print jobs) are not limited. */
  maxPayloadBytes: number;
  /** Per terminal whose agent runs outside the relay; hosted simulators are not limited. */
  messagesPerMinute: number;
}

export const DEFAULT_LISTENER_LIMITS: ListenerLimits = {
  maxPacketBytes: 65_536,
  connectTimeoutMs: 10_000,
  maxConnections: 10_000,
  maxPayloadBytes: 16_384,
  messagesPerMinute: 600,
};

export type ListenerLimit =
  'packet_size' | 'connect_timeout' | 'connections' | 'payload_size' | 'message_rate';

export interface EmbeddedBrokerOptions {
  store: Store;
  logger: Logger;
  /** Failed sign-ins per terminal id (username) and source, as for the HTTP API. */
  throttle?: SignInThrottle;
  onSignInFailure?: (outcome: SignInFailure | 'client_id') => void;
  limits?: Partial<ListenerLimits>;
  /** Counts what a limit refused (for metrics). */
  onLimit?: (limit: ListenerLimit) => void;
  /** Counts each connection attempt by outcome (for metrics); a storm of them is logged. */
  onConnect?: (outcome: ConnectOutcome) => void;
  /** PEM certificate and key: the listener then speaks TLS only. */
  tls?: { cert: Buffer; key: Buffer };
}

export async function startEmbeddedBroker(options: EmbeddedBrokerOptions): Promise<EmbeddedBroker> {
  const { store, logger, throttle, onSignInFailure } = options;
  const limits = { ...DEFAULT_LISTENER_LIMITS, ...options.limits };
  const warnings = new WarningLimiter(logger);
  const limited = (limit: ListenerLimit, fields: Record<string, unknown>, message: string) => {
    options.onLimit?.(limit);
    warnings.warn(limit, { ...fields, limit }, message);
  };
  const rate = new MessageRate(limits.messagesPerMinute);
  const connects = new ConnectWatch({
    logger,
    connected: () => agentClients().length,
    ...(options.onConnect ? { onConnect: options.onConnect } : {}),
  });
  /** Agents whose messages are rate-limited: every one but the relay's hosted simulators. */
  const rateLimited = new WeakSet<Client>();
  /**
   * Messages refused after aedes has acknowledged them (QoS 1): handed to no one. The
   * agent sends them again, as it does every message the relay does not acknowledge.
   */
  const dropped = new WeakSet<Buffer>();
  const identities = new WeakMap<Client, MqttIdentity>();
  /** The stored hash each agent signed in against: a session outlives no change of it. */
  const signedInWith = new WeakMap<Client, string>();
  /**
   * How often each terminal's credential changed here, and the count an agent's sign-in
   * began at: a change while its check runs (before aedes lists the client, where
   * disconnectAgent finds it) refuses or ends that session too.
   */
  const changes = new Map<string, number>();
  const signInBegan = new WeakMap<Client, number>();
  // Agents' hashes are Mosquitto's `$7$` (or, made before it, salted SHA-256).
  const secrets = new VerifiedSecretCache(verifyAgentSecret);
  // Checked for unknown terminal ids, so that they answer in the time a known one does.
  const decoy = hashForBroker(randomBytes(24).toString('base64url'));

  const broker = await Aedes.createBroker({
    // aedes' own emitter delivers at most 100 messages at once and queues the rest; once
    // deliveries finish synchronously (clients closing) it drains that queue by recursion,
    // and thousands of agents' last wills at once overflow the stack (mcollina/mqemitter
    // PR 204). Unbounded, nothing queues: the queue gave no back-pressure, publishers are
    // never slowed by it, and the messages it held are held by their deliveries instead.
    mq: mqemitter({ concurrency: 0, matchEmptyLevels: true }),
    // Each agent's connect finds its retained messages by topic, not by a scan of all.
    persistence: retainedByTopicPersistence(),
    connectTimeout: limits.connectTimeoutMs,
    authenticate: (client, username, password, done) => {
      const secret = password?.toString('utf8') ?? '';
      if (!username) return done(authError('username required'), false);
      const source = sourceOfClient(client);
      const wait = throttle?.check(username, source);
      if (wait !== undefined) {
        onSignInFailure?.('throttled');
        connects.record('refused');
        logger.debug({ username, source, retryAfterS: wait }, 'sign-in refused: too many failures');
        return done(authError('too many failed sign-ins', SERVER_UNAVAILABLE), false);
      }
      const refuse = (message: string, returnCode = BAD_CREDENTIAL) => {
        throttle?.failed(username, source);
        connects.record('refused');
        onSignInFailure?.(returnCode === IDENTIFIER_REJECTED ? 'client_id' : 'wrong_credential');
        logger.warn({ username, source, clientId: client.id }, message);
        done(authError(message, returnCode), false);
      };
      // Before the secret: a credential never opens, nor ends, another terminal's session.
      // Only agents sign in: the relay reaches the broker through relayChannel().
      if (!mayConnectAs(username, client.id)) {
        return refuse('agent sign-in refused: not its own client id', IDENTIFIER_REJECTED);
      }
      const began = changes.get(username) ?? 0;
      store
        .findAgentCredential(username)
        .then(async (hash) => {
          const ok = await secrets.verify(username, secret, hash ?? decoy);
          if (!hash || !ok || (changes.get(username) ?? 0) !== began) {
            return refuse('agent sign-in refused');
          }
          signInBegan.set(client, began);
          throttle?.succeeded(username, source);
          identities.set(client, { role: 'agent', terminalId: username });
          signedInWith.set(client, hash);
          // The relay's own simulated terminals run on its clock, faster than any reader.
          if ((await store.getTerminal(username))?.kind !== 'SIMULATOR') rateLimited.add(client);
          done(null, true);
        })
        .catch(() => {
          connects.record('refused');
          done(authError('credential check failed', SERVER_UNAVAILABLE), false);
        });
    },
    authorizePublish: (client, packet, done) => {
      const identity = client ? identities.get(client) : { role: 'relay' as const };
      if (!identity || !mayPublish(identity, packet.topic)) {
        logger.warn({ topic: packet.topic, clientId: client?.id }, 'publish refused');
        return done(new Error('not authorized'));
      }
      if (identity.role === 'agent') {
        const drop = (limit: ListenerLimit, message: string) => {
          dropped.add(packet.payload as Buffer);
          packet.retain = false;
          limited(limit, { terminalId: identity.terminalId, topic: packet.topic }, message);
        };
        if (packet.payload.length > limits.maxPayloadBytes) {
          drop('payload_size', `agent message over ${limits.maxPayloadBytes} bytes dropped`);
        } else if (
          // A closed client's publish is its last will: the relay must hear it went away.
          !client!.closed &&
          rateLimited.has(client!) &&
          !rate.take(identity.terminalId)
        ) {
          drop('message_rate', `agent over ${limits.messagesPerMinute} messages a minute: dropped`);
        }
      }
      done(null);
    },
    // Subscriptions are checked already; this holds whatever a session carries (retained
    // messages, a session restored) to the same rule, message by message.
    authorizeForward: (client, packet) => {
      if (dropped.has(packet.payload as Buffer)) return null;
      const identity = identities.get(client);
      return identity && mayReceive(identity, packet.topic) ? packet : null;
    },
    authorizeSubscribe: (client, subscription, done) => {
      const identity = identities.get(client);
      if (identity && maySubscribe(identity, subscription.topic)) return done(null, subscription);
      logger.warn({ topic: subscription.topic, clientId: client.id }, 'subscribe refused');
      done(null, null);
    },
  });

  broker.on('client', (client) => {
    const identity = identities.get(client);
    if (identity?.role !== 'agent') return;
    connects.record('accepted');
    if ((changes.get(identity.terminalId) ?? 0) !== signInBegan.get(client)) client.close();
  });

  broker.on('connectionError', (_client, error) => {
    if (/connect did not arrive in time/.test(error.message)) {
      connects.record('timed_out');
      limited('connect_timeout', {}, 'connection without CONNECT in time closed');
    }
  });

  const serve = (socket: net.Socket) => {
    socket.setNoDelay(true);
    broker.handle(
      limitPacketSize(socket, limits.maxPacketBytes, (declared) =>
        limited(
          'packet_size',
          { source: socket.remoteAddress, declared },
          `MQTT packet over ${limits.maxPacketBytes} bytes: connection closed`,
        ),
      ),
    );
  };
  const server: net.Server = options.tls
    ? tls
        .createServer(
          {
            ...options.tls,
            minVersion: 'TLSv1.2',
            noDelay: true,
            // A handshake is held no longer than a CONNECT may take.
            handshakeTimeout: limits.connectTimeoutMs,
          },
          serve,
        )
        .on('tlsClientError', (error, socket) =>
          logger.debug({ err: error, source: socket.remoteAddress }, 'TLS handshake failed'),
        )
    : net.createServer({ noDelay: true }, serve);
  const scheme = options.tls ? 'mqtts' : 'mqtt';
  server.maxConnections = limits.maxConnections;
  server.on('drop', (data) => {
    connects.record('over_limit');
    limited(
      'connections',
      { source: data?.remoteAddress },
      `${limits.maxConnections} connections held: one more closed`,
    );
  });

  const agentClients = () =>
    Object.values((broker as unknown as { clients: Record<string, Client> }).clients).flatMap(
      (client) => {
        const identity = identities.get(client);
        return identity?.role === 'agent' ? [{ client, terminalId: identity.terminalId }] : [];
      },
    );
  const end = (client: Client, terminalId: string) => {
    logger.info({ terminalId, clientId: client.id }, 'agent session ended: credential changed');
    // Closed without DISCONNECT: its last will tells the relay the terminal went away.
    client.close();
  };

  return {
    disconnectAgent(terminalId) {
      changes.set(terminalId, (changes.get(terminalId) ?? 0) + 1);
      for (const agent of agentClients()) {
        if (agent.terminalId === terminalId) end(agent.client, terminalId);
      }
    },
    async recheckAgents() {
      for (const { client, terminalId } of agentClients()) {
        if ((await store.findAgentCredential(terminalId)) !== signedInWith.get(client)) {
          end(client, terminalId);
        }
      }
    },
    relayChannel() {
      type Deliver = (packet: AedesPublishPacket, done: () => void) => void;
      const listeners: Array<[string, Deliver]> = [];
      return {
        async subscribe(filters, deliver) {
          for (const filter of filters) {
            const listener: Deliver = (packet, done) => {
              try {
                const payload = packet.payload as Buffer;
                if (!dropped.has(payload)) deliver(packet.topic, payload);
              } finally {
                done();
              }
            };
            await new Promise<void>((resolve) => broker.subscribe(filter, listener, resolve));
            listeners.push([filter, listener]);
          }
        },
        publish(topic, payload, options) {
          const packet = {
            cmd: 'publish' as const,
            topic,
            payload: Buffer.from(payload),
            qos: 1 as const,
            retain: options?.retain ?? false,
            dup: false,
          };
          return new Promise<void>((resolve, reject) =>
            broker.publish(packet, (error) => (error ? reject(error) : resolve())),
          );
        },
        async close() {
          for (const [filter, listener] of listeners.splice(0)) {
            await new Promise<void>((resolve) => broker.unsubscribe(filter, listener, resolve));
          }
        },
      };
    },
    connectInProcess() {
      const toBroker = new PassThrough();
      const toClient = new PassThrough();
      broker.handle(Duplex.from({ readable: toBroker, writable: toClient }));
      return Duplex.from({ readable: toClient, writable: toBroker });
    },
    async listen(host, port) {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen({ port, host, backlog: ACCEPT_BACKLOG }, () => resolve());
      });
      const bound = (server.address() as net.AddressInfo).port;
      return {
        url: `${scheme}://${host.includes(':') ? `[${host}]` : host}:${bound}`,
        port: bound,
      };
    },
    connectedAgents: () => agentClients().length,
    async close() {
      connects.close();
      // The broker ends every client connection, which lets the listener close.
      const closed = server.listening
        ? new Promise<void>((resolve) => server.close(() => resolve()))
        : Promise.resolve();
      await new Promise<void>((resolve) => broker.close(() => resolve()));
      await closed;
    },
  };
}

/** The listener's bounds as configured (TPS_MQTT_*). */
export function listenerLimits(config: {
  mqttMaxPacketBytes: number;
  mqttConnectTimeoutS: number;
  mqttMaxConnections: number;
  mqttMaxPayloadBytes: number;
  mqttMessagesPerMinute: number;
}): ListenerLimits {
  return {
    maxPacketBytes: config.mqttMaxPacketBytes,
    connectTimeoutMs: config.mqttConnectTimeoutS * 1000,
    maxConnections: config.mqttMaxConnections,
    maxPayloadBytes: config.mqttMaxPayloadBytes,
    messagesPerMinute: config.mqttMessagesPerMinute,
  };
}
