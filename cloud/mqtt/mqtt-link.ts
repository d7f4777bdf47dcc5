/**
 * The relay's side of the MQTT link to agents (docs/mqtt.md), as a transport only: it
 * publishes commands and report acknowledgements QoS 1, subscribes to the agents' topics
 * (shared among relays when several run), and parses what arrives into LinkEvents. What is
 * sent again, acknowledged, ordered or held is the outbox's and the inbox's business
 * (cloud/delivery/). A presence becomes a status report; the agent's last will sets
 * `connected` false.
 */
import type { MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import {
  CommandAckMessage,
  PresenceMessage,
  RELAY_SUBSCRIPTIONS,
  ReportMessage,
  UpdateStatusMessage,
  parseTopic,
  terminalTopics,
  type LocalCertMessage,
  type TerminalCommand,
  type UpdateOrderMessage,
} from '../../protocol/index.js';
import type { Clock } from '../../common/clock.js';
import type { LinkEvents, TerminalLink } from '../terminals/link.js';
import { startRelayClient } from './relay-client.js';

/**
 * The relay's way into a broker in its own process (the embedded one): subscriptions and
 * publishes with no MQTT client between, so no packet is written only to be parsed again,
 * and no session is kept for a client that lives and dies with the broker.
 */
export interface BrokerChannel {
  /** Hands every message on these filters to `deliver`, from now until close. */
  subscribe(filters: string[], deliver: (topic: string, payload: Buffer) => void): Promise<void>;
  /**
   * Publishes QoS 1 to the broker's subscribers (agents' sessions keep it if offline);
   * `retain` keeps it for whoever subscribes later.
   */
  publish(topic: string, payload: string, options?: { retain?: boolean }): Promise<void>;
  close(): Promise<void>;
}

export interface MqttLinkOptions {
  /** An external broker's address; or, with `channel`, only a name for logs. */
  url: string;
  /** The broker in the same process, reached without a client (see BrokerChannel). */
  channel?: BrokerChannel;
  username: string;
  password: string;
  clientId: string;
  clock: Clock;
  logger: Logger;
  /**
   * With several relays on one broker: share agent traffic (a `$share/<group>/`
   * subscription). The session is then a clean one: a broker keeps a shared message
   * queued for a member that died rather than give it to another (Mosquitto); agents
   * send what was not acknowledged again instead.
   */
  shareGroup?: string;
  /**
   * An agent's message larger than this is dropped before it is parsed (the embedded
   * broker drops it before; an external broker bounds only whole packets).
   */
  maxPayloadBytes: number;
}

export class MqttTerminalLink implements TerminalLink {
  private client: MqttClient | undefined;
  /** Subscribed through the in-process channel. */
  private channelOpen = false;
  /** Messages from the channel not yet taken in, in arrival order. */
  private readonly arrived: Array<[string, Buffer]> = [];
  private events: LinkEvents | undefined;
  /** Set by close(): the broker may cut the connection while it ends, which is no fault. */
  private closing = false;

  constructor(private readonly options: MqttLinkOptions) {}

  listen(events: LinkEvents): void {
    this.events = events;
  }

  async connect(): Promise<void> {
    const { url, username, password, clientId, shareGroup, channel } = this.options;
    // Agents' messages need somewhere to go: applying them to nothing would lose them.
    if (!this.events) throw new Error('the MQTT link connects only once it has a listener');
    if (channel) {
      await channel.subscribe(Object.values(RELAY_SUBSCRIPTIONS), (topic, payload) =>
        this.arrive(topic, payload),
      );
      this.channelOpen = true;
      return;
    }
    const { client, connected } = startRelayClient({
      url,
      username,
      password,
      clientId,
      // A shared subscription's session must outlive the relay: the broker queues for it.
      clean: shareGroup !== undefined,
      logger: this.options.logger,
      name: 'mqtt link',
      closing: () => this.closing,
      onMessage: (topic, payload) => this.receive(topic, payload),
      // The broker may have lost its queue with its restart.
      onConnect: () => this.events?.reconnected(),
    });
    this.client = client;
    await connected;
    const prefix = shareGroup ? `$share/${shareGroup}/` : '';
    await client.subscribeAsync(
      Object.values(RELAY_SUBSCRIPTIONS).map((topic) => `${prefix}${topic}`),
      { qos: 1 },
    );
  }

  get connected(): boolean {
    return this.channelOpen || (this.client?.connected ?? false);
  }

  /** Published only while connected: the outbox publishes again after a reconnect. */
  async publish(terminalId: string, command: TerminalCommand): Promise<void> {
    if (this.channelOpen) {
      await this.options.channel!.publish(
        terminalTopics(terminalId).command,
        JSON.stringify({ command }),
      );
    } else if (this.client?.connected) {
      this.client.publish(terminalTopics(terminalId).command, JSON.stringify({ command }), {
        qos: 1,
      });
    }
  }

  /**
   * Messages from the broker inside the process come one per agent's socket read, each in
   * a task of its own; taken in together at the end of the loop's turn, what they change
   * reaches the store together too, and shares its commit and the hand-over to the
   * writer thread (cloud/store/sqlite-writer.ts) instead of paying for one each.
   */
  private arrive(topic: string, payload: Buffer): void {
    if (this.arrived.push([topic, payload]) === 1) setImmediate(() => this.takeArrived());
  }

  private takeArrived(): void {
    for (const [topic, payload] of this.arrived.splice(0)) {
      try {
        this.receive(topic, payload);
      } catch (error) {
        // One message's fault must not lose the others of its turn.
        this.options.logger.error({ err: error, topic }, 'agent message not taken in');
      }
    }
  }

  /**
   * Publishes a terminal's update order, retained (docs/mqtt.md): the agent gets it when
   * it connects, however long it was away. False when not connected: the rollouts'
   * leader publishes every order again after a reconnect.
   */
  publishUpdateOrder(terminalId: string, order: UpdateOrderMessage): boolean {
    const topic = terminalTopics(terminalId).update;
    const payload = JSON.stringify(order);
    if (this.channelOpen) {
      this.options
        .channel!.publish(topic, payload, { retain: true })
        .catch((error: unknown) =>
          this.options.logger.error({ err: error, terminalId }, 'update order not published'),
        );
      return true;
    }
    if (!this.client?.connected) return false;
    this.client.publish(topic, payload, { qos: 1, retain: true });
    return true;
  }

  /** The answer to an agent's certificate request (protocol/local-tls.ts); dropped while disconnected. */
  publishLocalCert(terminalId: string, message: LocalCertMessage): void {
    const topic = terminalTopics(terminalId).localCert;
    const payload = JSON.stringify(message);
    if (this.channelOpen) {
      this.options.channel!.publish(topic, payload).catch((error: unknown) => {
        this.options.logger.warn({ err: error, terminalId }, 'local certificate not published');
      });
    } else {
      this.client?.publish(topic, payload, { qos: 1 });
    }
  }

  private receive(topic: string, payload: Buffer): void {
    const parsed = parseTopic(topic.replace(/^\$share\/[^/]+\//, ''));
    const events = this.events;
    if (!parsed || !events) return;
    const { terminalId, kind } = parsed;
    if (payload.length > this.options.maxPayloadBytes) {
      // Debug only: a hostile agent must not be able to fill the log.
      this.options.logger.debug(
        { terminalId, kind, bytes: payload.length },
        'agent message over the size limit ignored',
      );
      return;
    }
    const json = safeJson(payload);
    switch (kind) {
      case 'cmd-ack': {
        const ack = CommandAckMessage.safeParse(json);
        if (!ack.success) return this.invalid(terminalId, kind);
        events.commandAcked(terminalId, ack.data.command_id);
        return;
      }
      case 'report': {
        const message = ReportMessage.safeParse(json);
        if (!message.success) return this.invalid(terminalId, kind);
        const { journal, seq, prev, report } = message.data;
        void events.report(terminalId, report, {
          position: { journal, seq, ...(prev !== undefined ? { prev } : {}) },
          acknowledge: () => this.acknowledgeReport(terminalId, seq),
        });
        return;
      }
      case 'presence': {
        const presence = PresenceMessage.safeParse(json);
        if (!presence.success) return this.invalid(terminalId, kind);
        void events.report(terminalId, {
          type: 'status',
          at: presence.data.at ?? this.options.clock.now().toISOString(),
          readings: { connected: presence.data.connected },
        });
        if (presence.data.connected) {
          events.readerReported(terminalId, presence.data.reader);
          events.reachable(terminalId);
        }
        return;
      }
      case 'update-status': {
        // An empty retained message clears the topic: nothing to take in.
        if (payload.length === 0) return;
        const status = UpdateStatusMessage.safeParse(json);
        if (!status.success) return this.invalid(terminalId, kind);
        events.updateStatus?.(terminalId, status.data);
        return;
      }
      case 'local-cert-request':
        events.localCertRequest?.(terminalId, json);
        return;
    }
  }

  private acknowledgeReport(terminalId: string, seq: number): void {
    const topic = terminalTopics(terminalId).reportAck;
    const payload = JSON.stringify({ seq });
    if (!this.channelOpen) {
      this.client?.publish(topic, payload, { qos: 1 });
      return;
    }
    // Not acknowledged for the agent: it sends the report again, and it applies once.
    this.options.channel!.publish(topic, payload).catch((error: unknown) => {
      this.options.logger.warn({ err: error, terminalId, seq }, 'report-ack not published');
    });
  }

  private invalid(terminalId: string, kind: string): void {
    this.options.logger.warn({ terminalId, kind }, 'invalid message from agent ignored');
  }

  async close(): Promise<void> {
    this.closing = true;
    if (this.channelOpen) {
      this.channelOpen = false;
      await this.options.channel!.close();
    }
    await this.client?.endAsync();
  }
}

function safeJson(payload: Buffer): unknown {
  try {
    return JSON.parse(payload.toString('utf8'));
  } catch {
    return undefined;
  }
}
