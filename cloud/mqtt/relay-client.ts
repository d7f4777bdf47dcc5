/**
 * The relay as an MQTT client of an external broker (Mosquitto, EMQX): how its links
 * connect, whatever they subscribe to. MQTT 3.1.1, which aedes speaks and which Mosquitto
 * and EMQX take `$share` filters from; mqtt.js reconnects every second by itself.
 */
import mqtt, { type MqttClient } from 'mqtt';
import type { Logger } from 'pino';

export interface RelayClientOptions {
  url: string;
  username: string;
  password: string;
  clientId: string;
  /** A clean session, or one the broker keeps across reconnects and restarts. */
  clean: boolean;
  logger: Logger;
  /** Names the link in its log lines ("mqtt link", "fleet link"). */
  name: string;
  /** Set while the link closes: the broker may cut the connection then, which is no fault. */
  closing: () => boolean;
  onMessage: (topic: string, payload: Buffer) => void;
  /** At every connect, the first one included. */
  onConnect?: () => void;
}

/** Starts connecting; the caller keeps the client (to end it) before awaiting `connected`. */
export function startRelayClient(options: RelayClientOptions): {
  client: MqttClient;
  connected: Promise<void>;
} {
  const { logger, name } = options;
  const client = mqtt.connect(options.url, {
    username: options.username,
    password: options.password,
    clientId: options.clientId,
    clean: options.clean,
    protocolVersion: 4,
    reconnectPeriod: 1000,
    connectTimeout: 10_000,
  });
  client.on('connect', () => {
    // Nagle off (docs/architecture.md, platform facts): mqtt.js builds each connection's socket itself.
    (client.stream as { setNoDelay?: (noDelay: boolean) => void }).setNoDelay?.(true);
    options.onConnect?.();
  });
  client.on('message', options.onMessage);
  client.on('error', (error) => {
    if (options.closing()) logger.debug({ err: error }, `${name} closing`);
    else logger.warn({ err: error }, `${name} error`);
  });
  const connected = new Promise<void>((resolve, reject) => {
    client.once('connect', () => resolve());
    client.once('error', reject);
  });
  return { client, connected };
}
