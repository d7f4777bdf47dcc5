/**
 * The relay's MQTT client for fleet traffic (docs/mqtt.md, "Fleet topics"), beside the
 * transaction link (cloud/mqtt/mqtt-link.ts) and as a transport only: it publishes each
 * terminal's configuration (retained) and diagnostic requests, and hands on what agents
 * say on their fleet topics, checked. Its own connection, in a clean session, subscribed
 * without sharing: every relay hears every agent's retained reports at subscribe, and a
 * diagnostic answer reaches the relay that waits for it whichever relay the agent is
 * heard through. Fleet messages are few: a handful per terminal and day.
 */
import type { MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import {
  ConfigReportMessage,
  DiagnosticReplyMessage,
  FLEET_SUBSCRIPTIONS,
  FactsMessage,
  parseTopic,
  terminalTopics,
  type ConfigMessage,
  type DiagnosticRequestMessage,
  type LocalCredentialsMessage,
} from '../../protocol/index.js';
import type { BrokerChannel } from '../mqtt/mqtt-link.js';
import { startRelayClient } from '../mqtt/relay-client.js';

/** What agents say on the fleet topics, as it arrives. */
export interface FleetLinkEvents {
  configReport(terminalId: string, report: ConfigReportMessage): void;
  facts(terminalId: string, facts: FactsMessage): void;
  diagnosticReply(terminalId: string, reply: DiagnosticReplyMessage): void;
}

export interface FleetLinkOptions {
  /** An external broker's address; or, with `channel`, only a name for logs. */
  url: string;
  /** The broker in the same process, reached without a client (cloud/mqtt/mqtt-link.ts). */
  channel?: BrokerChannel;
  username: string;
  password: string;
  clientId: string;
  logger: Logger;
  /** An agent's message larger than this is dropped unparsed (as the transaction link does). */
  maxPayloadBytes: number;
}

export class FleetLink {
  private client: MqttClient | undefined;
  private channelOpen = false;
  private closing = false;

  constructor(
    private readonly options: FleetLinkOptions,
    private readonly events: FleetLinkEvents,
  ) {}

  async connect(): Promise<void> {
    const { url, username, password, clientId, channel } = this.options;
    if (channel) {
      await channel.subscribe(Object.values(FLEET_SUBSCRIPTIONS), (topic, payload) =>
        this.receive(topic, payload),
      );
      this.channelOpen = true;
      return;
    }
    const { client, connected } = startRelayClient({
      url,
      username,
      password,
      clientId,
      clean: true,
      logger: this.options.logger,
      name: 'fleet link',
      closing: () => this.closing,
      onMessage: (topic, payload) => this.receive(topic, payload),
    });
    this.client = client;
    await connected;
    // A clean session forgets subscriptions: mqtt.js subscribes again after a reconnect.
    await client.subscribeAsync(Object.values(FLEET_SUBSCRIPTIONS), { qos: 1 });
  }

  get connected(): boolean {
    return this.channelOpen || (this.client?.connected ?? false);
  }

  /**
   * The terminal's configuration, retained: its agent receives it at every subscribe.
   * Dropped while disconnected; the service publishes again when the agent comes online.
   */
  publishConfig(terminalId: string, message: ConfigMessage): void {
    this.publish(terminalTopics(terminalId).config, JSON.stringify(message), true);
  }

  /** The verifiers of the terminal's POS credentials, retained as the configuration is. */
  publishLocalCredentials(terminalId: string, message: LocalCredentialsMessage): void {
    this.publish(terminalTopics(terminalId).localCredentials, JSON.stringify(message), true);
  }

  /** Answers false when not connected: the request cannot leave. */
  requestDiagnostic(terminalId: string, request: DiagnosticRequestMessage): boolean {
    return this.publish(terminalTopics(terminalId).diagnostic, JSON.stringify(request), false);
  }

  async close(): Promise<void> {
    this.closing = true;
    if (this.channelOpen) {
      this.channelOpen = false;
      await this.options.channel?.close();
    }
    await this.client?.endAsync();
  }

  /** QoS 1; answers false when not connected: the message cannot leave. */
  private publish(topic: string, payload: string, retain: boolean): boolean {
    if (this.channelOpen) {
      this.options.channel!.publish(topic, payload, { retain }).catch((error: unknown) => {
        this.options.logger.warn({ err: error, topic }, 'fleet message not published');
      });
      return true;
    }
    if (!this.client?.connected) return false;
    this.client.publish(topic, payload, { qos: 1, retain });
    return true;
  }

  private receive(topic: string, payload: Buffer): void {
    const parsed = parseTopic(topic);
    if (!parsed) return;
    const { terminalId, kind } = parsed;
    // A retained message is cleared by an empty one: nothing to hand on.
    if (payload.length === 0) return;
    if (payload.length > this.options.maxPayloadBytes) {
      this.options.logger.debug({ terminalId, kind }, 'agent message over the size limit ignored');
      return;
    }
    let json: unknown;
    try {
      json = JSON.parse(payload.toString('utf8'));
    } catch {
      json = undefined;
    }
    const invalid = () =>
      this.options.logger.warn({ terminalId, kind }, 'invalid fleet message from agent ignored');
    if (kind === 'config-report') {
      const report = ConfigReportMessage.safeParse(json);
      if (report.success) this.events.configReport(terminalId, report.data);
      else invalid();
    } else if (kind === 'facts') {
      const facts = FactsMessage.safeParse(json);
      if (facts.success) this.events.facts(terminalId, facts.data);
      else invalid();
    } else if (kind === 'diag-reply') {
      const reply = DiagnosticReplyMessage.safeParse(json);
      if (reply.success) this.events.diagnosticReply(terminalId, reply.data);
      else invalid();
    }
  }
}
