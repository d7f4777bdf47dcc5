/**
 * The agent's MQTT link to the relay (protocol/mqtt.ts is the contract):
 *
 * - one persistent session (clean: false, client id `agent-<terminal_id>`), QoS 1 both ways;
 * - subscribes to its `cmd` and `report-ack` topics at every connect (a broker that lost
 *   its sessions, such as an in-memory one restarted, gets them back);
 * - last will: retained `{connected: false}` on `presence`; `{connected: true}` at connect,
 *   with what the card reader can do (the relay refuses a request the reader cannot do);
 * - a command is handed to `onCommand` (which journals it) before the broker gets its
 *   PUBACK; an invalid message is logged and dropped, never a crash;
 * - publishes the outbox in seq order after every (re)connect and each new report; a
 *   report leaves the outbox only on the relay's report-ack. When the oldest waiting report
 *   has waited a whole `resendMs` with no report-ack meanwhile, it publishes them all again: a broker that
 *   restarted, or a relay without a persistent session, may have dropped them;
 * - the journal takes an acknowledged report out of its outbox at once and writes the
 *   delete with its next commit; when none came a second after an ack, the link has the
 *   journal commit the deletes (agent/journal.ts says why they may wait);
 * - with `onUpdateOrder`, also subscribes to its `update` topic (retained: the release it
 *   should run) and keeps its retained `update-status` published (agent/updater.ts);
 * - reconnects itself with capped, jittered exponential back-off (mqtt.js would retry at
 *   a fixed period: every terminal at once after a relay restart).
 */
import { PassThrough, type Duplex } from 'node:stream';
import { MqttClient, type IClientOptions, type IPublishPacket } from 'mqtt';
import type { Logger } from 'pino';
import {
  CommandMessage,
  ReportAckMessage,
  agentClientId,
  terminalTopics,
  type CommandAckMessage,
  type PresenceMessage,
  type ReportMessage,
} from '../protocol/mqtt.js';
import { UpdateOrderMessage, type UpdateStatusMessage } from '../protocol/update.js';
import type { LocalCertRequestMessage } from '../protocol/local-tls.js';
import { FREE_TEXT, maskFreeText, maskUpdateStatusText } from '../protocol/free-text.js';
import type { ReaderCapabilities } from '../protocol/reader-capabilities.js';
import { Backoff, type BackoffOptions } from '../common/backoff.js';
import { openBrokerSocket } from './broker-socket.js';
import type { Clock, Timers } from '../common/clock.js';
import type { BrokerConfig } from './config.js';
import type { CommandOutcome, Journal } from './journal.js';
import { withoutCardNumbers } from './reports.js';

export interface AgentLinkOptions {
  terminalId: string;
  broker: BrokerConfig;
  journal: Pick<
    Journal,
    'pendingReports' | 'pendingReportTexts' | 'previousReport' | 'dropReport' | 'commitDrops' | 'id'
  >;
  /** Journals (and acts on) a valid command; called before the broker's PUBACK. */
  onCommand: (message: CommandMessage) => void;
  onConnectionChange?: (connected: boolean) => void;
  /** A valid update order (agent/updater.ts); without it the `update` topic is not subscribed. */
  onUpdateOrder?: (order: UpdateOrderMessage) => void;
  logger: Logger;
  clock: Clock;
  timers: Timers;
  /** Reconnect back-off (default 500 ms doubling to 60 s, jittered). */
  backoff?: Partial<BackoffOptions>;
  /** A connection up this long counts as good: the back-off starts over (default 10 s). */
  stableAfterMs?: number;
  /** Give up a connect attempt without CONNACK after this long (default 10 s). */
  connectTimeoutMs?: number;
  agentVersion?: string;
  /** What the card reader can do, told with every `connected: true` presence. */
  readerCapabilities?: ReaderCapabilities;
  /** Publish waiting reports again after this long without a report-ack (default 10 s). */
  resendMs?: number;
  /** Client id; default `agent-<terminal_id>` (doctor uses another one). */
  clientId?: string;
  /** The byte stream to the broker; default a connection to `broker.url`. */
  openStream?: () => Duplex;
  /** Fleet traffic (docs/mqtt.md, "Fleet topics"): subscribed to only when given. */
  fleet?: FleetHandlers;
  /** Certificates for the local API (agent/local-api/tls-identity.ts): subscribed to only when given. */
  localTls?: LocalTlsHandlers;
}

/** What the link hands on of the relay's certificate answers; values are JSON, unchecked. */
export interface LocalTlsHandlers {
  answer(value: unknown): void;
  /** Connected and subscribed: a request may leave now. */
  connected(): void;
}

/** What the link hands on of the fleet's messages; values are JSON, unchecked. */
export interface FleetHandlers {
  config(value: unknown): void;
  diagnostic(value: unknown): void;
  /** Verifiers of the terminal's POS credentials (agent/local-api/credentials.ts). */
  localCredentials?(value: unknown): void;
  /** Connected and subscribed: time to say what the relay should know. */
  connected(): void;
}

type FleetTopic = 'configReport' | 'facts' | 'diagnosticReply';

/** The free text of each fleet message, where a card number is masked before it leaves. */
const FLEET_FREE_TEXT: Record<FleetTopic, readonly string[]> = {
  configReport: FREE_TEXT.configReport,
  facts: FREE_TEXT.facts,
  diagnosticReply: FREE_TEXT.diagnosticReply,
};

/** Outbox rows read per batch when flushing. */
const FLUSH_BATCH = 500;

/** How long after a report-ack the journal's owed deletes are committed at the latest. */
const COMMIT_DROPS_MS = 1000;

export class AgentLink {
  private readonly client: MqttClient;
  private readonly topics: ReturnType<typeof terminalTopics>;
  private readonly backoff: Backoff;
  /** Acks not yet PUBACKed by the broker, re-sent after a reconnect. */
  private readonly pendingAcks = new Map<string, string>();
  private reconnectTimer: unknown;
  private resendTimer: unknown;
  /** Set from a report-ack until the journal commits the deletes it owes. */
  private commitDropsTimer: unknown;
  /** Report-acks received since the last resend check. */
  private acksSinceCheck = 0;
  /** The oldest waiting report at the last resend check, if it had been published by then. */
  private oldestPublishedAtCheck: number | undefined;
  private connectedAt = 0;
  /** Highest seq published on the current connection. */
  private sentUpTo = 0;
  private stopped = false;
  /** The updater's last status, published again at every connect (retained). */
  private updateStatus: string | undefined;
  /** Sent with every report, so the relay tells this journal's seqs from an earlier one's. */
  private readonly journalId: string;

  constructor(private readonly options: AgentLinkOptions) {
    this.topics = terminalTopics(options.terminalId);
    this.journalId = options.journal.id;
    this.backoff = new Backoff({ initialMs: 500, maxMs: 60_000, ...options.backoff });
    const { broker } = options;
    const will: PresenceMessage = { connected: false };
    const clientOptions: IClientOptions = {
      clientId: options.clientId ?? agentClientId(options.terminalId),
      clean: false,
      protocolVersion: 4,
      keepalive: broker.keepalive_s,
      reconnectPeriod: 0,
      connectTimeout: options.connectTimeoutMs ?? 10_000,
      manualConnect: true,
      // Not mqtt-packet's table of all 65,536 two-byte numbers (≈ 8 MB of heap, built on the
      // first write): a terminal writes a few packets a minute (docs/performance.md).
      writeCache: false,
      will: {
        topic: this.topics.presence,
        payload: Buffer.from(JSON.stringify(will)),
        qos: 1,
        retain: true,
      },
      ...(broker.username !== undefined ? { username: broker.username } : {}),
      ...(broker.password !== undefined ? { password: broker.password } : {}),
    };
    this.client = new MqttClient(() => this.openSocket(), clientOptions);
    this.client.handleMessage = (packet, done) => {
      this.onPublish(packet);
      done();
    };
    this.client.on('connect', () => this.onConnect());
    this.client.on('close', () => this.onClose());
    this.client.on('error', (error) => this.onError(error));
  }

  start(): void {
    this.options.logger.info({ url: this.options.broker.url }, 'connecting to the broker');
    this.client.connect();
    this.scheduleResendCheck();
  }

  get connected(): boolean {
    return this.client.connected;
  }

  /** Publishes the updater's status, retained, now if connected and again at every connect. */
  publishUpdateStatus(status: UpdateStatusMessage): void {
    this.updateStatus = JSON.stringify(
      withoutCardNumbers(this.options.logger, 'update-status', maskUpdateStatusText(status)),
    );
    if (this.client.connected && !this.stopped) this.publishUpdateStatusNow();
  }

  private publishUpdateStatusNow(): void {
    if (this.updateStatus === undefined) return;
    this.client.publish(this.topics.updateStatus, this.updateStatus, { qos: 1, retain: true });
  }

  /** Tells the relay a command is journaled (ACCEPTED) or refused as expired. */
  ackCommand(commandId: string, outcome: CommandOutcome): void {
    const ack: CommandAckMessage = { command_id: commandId, outcome };
    const payload = JSON.stringify(ack);
    this.pendingAcks.set(commandId, payload);
    this.publishAck(commandId, payload);
  }

  /** Publishes outbox reports not yet sent on this connection, in seq order. */
  flush(): void {
    if (!this.client.connected || this.stopped) return;
    for (;;) {
      const rows = this.options.journal.pendingReportTexts(this.sentUpTo, FLUSH_BATCH);
      let prev = rows[0] ? this.options.journal.previousReport(rows[0].seq) : 0;
      for (const row of rows) {
        this.client.publish(this.topics.report, reportMessage(this.journalId, row, prev), {
          qos: 1,
        });
        prev = row.seq;
        this.sentUpTo = row.seq;
      }
      if (rows.length < FLUSH_BATCH) return;
    }
  }

  /**
   * A fleet message to the relay, QoS 1, card numbers in its free text masked; retained
   * for reports the relay reads at its own (re)connect. Dropped while disconnected:
   * `fleet.connected` says it again.
   */
  publishFleet(topic: FleetTopic, message: object, retain: boolean): void {
    if (!this.client.connected || this.stopped) return;
    const sent = withoutCardNumbers(
      this.options.logger,
      topic,
      maskFreeText(message, FLEET_FREE_TEXT[topic]),
    );
    this.client.publish(this.topics[topic], JSON.stringify(sent), { qos: 1, retain });
  }

  /** A certificate request to the relay, QoS 1; false while disconnected (it cannot leave). */
  publishLocalCertRequest(request: LocalCertRequestMessage): boolean {
    if (!this.client.connected || this.stopped) return false;
    this.client.publish(this.topics.localCertRequest, JSON.stringify(request), { qos: 1 });
    return true;
  }

  /** Says `connected: false` (retained) when it can, then closes the session's connection. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.options.timers.clearTimeout(this.reconnectTimer);
    this.options.timers.clearTimeout(this.resendTimer);
    this.options.timers.clearTimeout(this.commitDropsTimer);
    if (this.client.connected) {
      const presence: PresenceMessage = { connected: false, at: this.now() };
      try {
        await this.client.publishAsync(this.topics.presence, JSON.stringify(presence), {
          qos: 1,
          retain: true,
        });
      } catch (error) {
        this.options.logger.warn({ err: error }, 'could not publish presence before stopping');
      }
      await this.client.endAsync();
    } else {
      await this.client.endAsync(true);
    }
  }

  private openSocket(): Duplex {
    try {
      return this.options.openStream?.() ?? openBrokerSocket(this.options.broker);
    } catch (error) {
      // An unreadable certificate file: this attempt fails, the back-off retries.
      this.options.logger.error({ err: error }, 'cannot open the broker connection');
      const failed = new PassThrough();
      process.nextTick(() => failed.destroy(error as Error));
      return failed;
    }
  }

  private onConnect(): void {
    this.connectedAt = this.options.clock.now().getTime();
    this.sentUpTo = 0;
    const { logger } = this.options;
    logger.info({ url: this.options.broker.url }, 'connected to the broker');
    const presence: PresenceMessage = {
      connected: true,
      at: this.now(),
      ...(this.options.agentVersion ? { agent_version: this.options.agentVersion } : {}),
      ...(this.options.readerCapabilities ? { reader: this.options.readerCapabilities } : {}),
    };
    const fleet = this.options.fleet;
    this.client.subscribe(
      {
        [this.topics.command]: { qos: 1 },
        [this.topics.reportAck]: { qos: 1 },
        ...(this.options.onUpdateOrder ? { [this.topics.update]: { qos: 1 as const } } : {}),
        ...(fleet
          ? { [this.topics.config]: { qos: 1 }, [this.topics.diagnostic]: { qos: 1 } }
          : {}),
        ...(fleet?.localCredentials ? { [this.topics.localCredentials]: { qos: 1 as const } } : {}),
        ...(this.options.localTls ? { [this.topics.localCert]: { qos: 1 as const } } : {}),
      },
      (error, granted) => {
        if (error) logger.error({ err: error }, 'subscribing failed');
        const refused = (granted ?? []).filter((g) => g.qos === 128).map((g) => g.topic);
        // The broker's access rules do not match this terminal: no command will arrive.
        if (refused.length) logger.error({ topics: refused }, 'the broker refused a subscription');
        // Only now say "connected": the relay re-sends its pending commands when it hears
        // it, and a command published before the subscription would miss a new session.
        // Not once stopping: stop() has said "disconnected" (retained), which must stay.
        if (this.stopped) return;
        this.client.publish(this.topics.presence, JSON.stringify(presence), {
          qos: 1,
          retain: true,
        });
        this.publishUpdateStatusNow();
        fleet?.connected();
        this.options.localTls?.connected();
      },
    );
    for (const [commandId, payload] of this.pendingAcks) this.publishAck(commandId, payload);
    this.options.onConnectionChange?.(true);
    this.flush();
  }

  private onClose(): void {
    if (this.connectedAt !== 0) {
      const upMs = this.options.clock.now().getTime() - this.connectedAt;
      this.connectedAt = 0;
      if (upMs >= (this.options.stableAfterMs ?? 10_000)) this.backoff.reset();
      if (this.stopped) this.options.logger.info('disconnected from the broker');
      else this.options.logger.warn('disconnected from the broker');
      this.options.onConnectionChange?.(false);
    }
    if (this.stopped || this.reconnectTimer !== undefined) return;
    const delay = this.backoff.next();
    this.options.logger.info(
      { delayMs: delay, attempt: this.backoff.failures },
      'reconnecting to the broker after a back-off',
    );
    this.reconnectTimer = this.options.timers.setTimeout(() => {
      this.reconnectTimer = undefined;
      if (this.stopped) return;
      // The same stores: messages in flight are re-sent (the relay applies them once by seq).
      this.client.reconnect({
        incomingStore: this.client.incomingStore,
        outgoingStore: this.client.outgoingStore,
      });
    }, delay);
  }

  private onError(error: Error & { code?: unknown }): void {
    // A write racing the close of a stopping link is expected, not a fault.
    if (this.stopped) return;
    // Connection refused, bad credentials, TLS errors: each attempt's close schedules the next.
    this.options.logger.warn(
      { err: { message: error.message, code: error.code } },
      'broker connection error',
    );
  }

  private onPublish(packet: IPublishPacket): void {
    const { logger } = this.options;
    // An empty retained message clears an update order: nothing to do.
    if (packet.topic === this.topics.update && packet.payload.length === 0) return;
    let value: unknown;
    try {
      value = JSON.parse(packet.payload.toString());
    } catch {
      logger.warn({ topic: packet.topic }, 'ignored a message that is not JSON');
      return;
    }
    try {
      if (packet.topic === this.topics.command) {
        const parsed = CommandMessage.safeParse(value);
        if (!parsed.success) {
          logger.warn(
            { topic: packet.topic, issues: issues(parsed.error) },
            'ignored an invalid command',
          );
          return;
        }
        this.options.onCommand(parsed.data);
      } else if (packet.topic === this.topics.reportAck) {
        const parsed = ReportAckMessage.safeParse(value);
        if (!parsed.success) {
          logger.warn(
            { topic: packet.topic, issues: issues(parsed.error) },
            'ignored an invalid report-ack',
          );
          return;
        }
        this.acksSinceCheck++;
        if (this.options.journal.dropReport(parsed.data.seq)) this.scheduleCommitDrops();
      } else if (packet.topic === this.topics.update && this.options.onUpdateOrder) {
        const parsed = UpdateOrderMessage.safeParse(value);
        if (!parsed.success) {
          logger.warn(
            { topic: packet.topic, issues: issues(parsed.error) },
            'ignored an invalid update order',
          );
          return;
        }
        this.options.onUpdateOrder(parsed.data);
      } else if (packet.topic === this.topics.config && this.options.fleet) {
        this.options.fleet.config(value);
      } else if (packet.topic === this.topics.diagnostic && this.options.fleet) {
        this.options.fleet.diagnostic(value);
      } else if (packet.topic === this.topics.localCredentials && this.options.fleet) {
        this.options.fleet.localCredentials?.(value);
      } else if (packet.topic === this.topics.localCert && this.options.localTls) {
        this.options.localTls.answer(value);
      } else {
        logger.warn({ topic: packet.topic }, 'ignored a message on an unexpected topic');
      }
    } catch (error) {
      // Journal failures (disk full...) must not kill the link; no ack was sent, so the
      // relay sends the command again.
      logger.error({ err: error, topic: packet.topic }, 'handling a message failed');
    }
  }

  /** A commit of the deletes owed a second after the first (a no-op if one came meanwhile). */
  private scheduleCommitDrops(): void {
    if (this.commitDropsTimer !== undefined) return;
    this.commitDropsTimer = this.options.timers.setTimeout(
      () => {
        this.commitDropsTimer = undefined;
        if (this.stopped) return;
        try {
          this.options.journal.commitDrops();
        } catch (error) {
          // Still owed: the next commit, or the next ack's timer, writes them.
          this.options.logger.error({ err: error }, 'committing acknowledged reports failed');
        }
      },
      COMMIT_DROPS_MS,
      { unref: true },
    );
  }

  /**
   * Every resendMs: when the oldest waiting report was already published at the check
   * before (it has waited a whole period, not a moment) and no report-ack came meanwhile,
   * the outbox is published again (the relay applies it once, by seq). A report published
   * just before a check is not sent twice: a copy still in flight when the link drops is
   * sent again first at the reconnect, and everything else waits for its PUBACK.
   */
  private scheduleResendCheck(): void {
    this.resendTimer = this.options.timers.setTimeout(() => {
      if (this.stopped) return;
      const oldest = this.options.journal.pendingReports(0, 1)[0];
      const published = oldest && oldest.seq <= this.sentUpTo ? oldest.seq : undefined;
      if (
        this.client.connected &&
        published !== undefined &&
        published === this.oldestPublishedAtCheck &&
        this.acksSinceCheck === 0
      ) {
        this.options.logger.info(
          { fromSeq: published },
          'no report-ack: publishing the outbox again',
        );
        this.sentUpTo = 0;
        this.flush();
      }
      this.oldestPublishedAtCheck = published;
      this.acksSinceCheck = 0;
      this.scheduleResendCheck();
    }, this.options.resendMs ?? 10_000);
  }

  private publishAck(commandId: string, payload: string): void {
    if (!this.client.connected) return;
    this.client.publish(this.topics.commandAck, payload, { qos: 1 }, (error) => {
      if (!error && this.pendingAcks.get(commandId) === payload) this.pendingAcks.delete(commandId);
    });
  }

  private now(): string {
    return this.options.clock.now().toISOString();
  }
}

/**
 * A ReportMessage around a report's JSON text as the journal keeps it (the journal wrote
 * it with JSON.stringify), rather than parsed only to be written again. The journal id is
 * hex (protocol/mqtt.ts); seq and prev are integers.
 */
function reportMessage(journal: string, row: { seq: number; body: string }, prev: number) {
  const head: Omit<ReportMessage, 'report'> = { journal, seq: row.seq, prev };
  return `${JSON.stringify(head).slice(0, -1)},"report":${row.body}}`;
}

function issues(error: { issues: ReadonlyArray<{ path: PropertyKey[]; message: string }> }) {
  return error.issues.map((i) => `${i.path.map(String).join('.') || '(message)'}: ${i.message}`);
}
