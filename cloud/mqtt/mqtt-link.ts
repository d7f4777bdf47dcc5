/**
 * The relay's side of the MQTT link to agents (docs/mqtt.md). Commands are published
 * QoS 1 and published again until the agent acknowledges them (it journals first);
 * reports are applied once each, in order, by their per-agent sequence number, and
 * acknowledged only after they are committed, so an agent keeps a report in its outbox
 * until the relay has it for good. Presence and the agent's last will keep `connected`.
 */
import type { Duplex } from 'node:stream';
import mqtt, { MqttClient } from 'mqtt';
import type { Logger } from 'pino';
import {
  CommandAckMessage,
  PresenceMessage,
  RELAY_SUBSCRIPTIONS,
  ReportMessage,
  parseTopic,
  terminalTopics,
  type TerminalCommand,
} from '../../protocol/index.js';
import type { Clock } from '../clock.js';
import { ReportOutOfOrder, checkReport, type ReportPosition, type Store } from '../store/store.js';
import type { ReportHandler, TerminalLink } from '../terminals/link.js';

/**
 * How long a report that arrived ahead of an earlier one is held for it before it is
 * dropped unacknowledged, for the agent to send it again.
 */
const GAP_WAIT_MS = 3000;

export interface MqttLinkOptions {
  /** An external broker's address; or, with `connectInProcess`, only a name for logs. */
  url: string;
  /** Connects to a broker in the same process instead of over the network. */
  connectInProcess?: () => Duplex;
  username: string;
  password: string;
  clientId: string;
  store: Store;
  clock: Clock;
  logger: Logger;
  /** Unacknowledged commands are published again this often. */
  resendMs?: number;
  /**
   * With several relays on one broker: share agent traffic (a `$share/<group>/`
   * subscription). The session is then a clean one: a broker keeps a shared message
   * queued for a member that died rather than give it to another (Mosquitto); agents
   * send what was not acknowledged again instead.
   */
  shareGroup?: string;
  /** Counts what became of each report (for metrics). */
  onReportOutcome?: (outcome: 'applied' | 'duplicate' | 'gap') => void;
}

interface HeldReport {
  report: ReportMessage['report'];
  position: ReportPosition;
  timer: NodeJS.Timeout;
}

interface PendingCommand {
  terminalId: string;
  command: TerminalCommand;
  resolve: () => void;
  timer: NodeJS.Timeout;
}

export class MqttTerminalLink implements TerminalLink {
  private client: MqttClient | undefined;
  private handler: ReportHandler | undefined;
  /** Agents' messages wait for the handler: applying them to nothing would lose them. */
  private readonly handlerSet: Promise<void>;
  private resolveHandlerSet: () => void = () => {};
  private readonly pending = new Map<string, PendingCommand>();
  /** The newest report this link applied per terminal: a cheap filter for redeliveries. */
  private readonly lastReports = new Map<string, ReportPosition>();
  /**
   * Reports that arrived ahead of their predecessor, per terminal, held (unacknowledged)
   * while the terminal's later messages go on: the predecessor may come next on this
   * connection (a client re-sends what was in flight at a reconnect first), or be applied
   * by another relay sharing the traffic. Tried again after each report applied.
   */
  private readonly held = new Map<string, Map<number, HeldReport>>();
  private unwatch: () => void = () => {};
  /** Set by close(): the broker may cut the connection while it ends, which is no fault. */
  private closing = false;
  /** Messages of one terminal are handled one after another, in arrival order. */
  private readonly queues = new Map<string, Promise<void>>();

  constructor(private readonly options: MqttLinkOptions) {
    this.handlerSet = new Promise((resolve) => (this.resolveHandlerSet = resolve));
  }

  async connect(): Promise<void> {
    const { url, username, password, clientId, shareGroup, connectInProcess } = this.options;
    const options = {
      username,
      password,
      clientId,
      // MQTT 3.1.1: what aedes speaks; Mosquitto and EMQX take $share filters from it too.
      clean: shareGroup !== undefined,
      protocolVersion: 4 as const,
      reconnectPeriod: 1000,
      connectTimeout: 10_000,
    };
    const client = connectInProcess
      ? new MqttClient(connectInProcess, options)
      : mqtt.connect(url, options);
    this.client = client;
    this.unwatch = this.options.store.watch((change) => {
      if (change.kind === 'command-acked') this.settle(change.commandId);
      if (change.kind === 'report' && this.held.has(change.terminalId)) {
        this.enqueue(change.terminalId, () => this.retryHeld(change.terminalId));
      }
    });
    client.on('connect', () => {
      // Nagle off (PLATFORM-NOTES): mqtt.js builds each connection's socket itself.
      (client.stream as { setNoDelay?: (noDelay: boolean) => void }).setNoDelay?.(true);
      // Re-sends after a reconnect: the broker may have lost its queue with its restart.
      for (const pending of this.pending.values()) this.publish(pending);
    });
    client.on('message', (topic, payload) => this.receive(topic, payload));
    client.on('error', (error) => {
      if (this.closing) this.options.logger.debug({ err: error }, 'mqtt link closing');
      else this.options.logger.warn({ err: error }, 'mqtt link error');
    });
    await new Promise<void>((resolve, reject) => {
      client.once('connect', () => resolve());
      client.once('error', reject);
    });
    const prefix = shareGroup ? `$share/${shareGroup}/` : '';
    await client.subscribeAsync(
      Object.values(RELAY_SUBSCRIPTIONS).map((topic) => `${prefix}${topic}`),
      { qos: 1 },
    );
  }

  get connected(): boolean {
    return this.client?.connected ?? false;
  }

  /** Commands sent and not yet acknowledged (for metrics). */
  get awaitingAck(): number {
    return this.pending.size;
  }

  onReport(handler: ReportHandler): void {
    this.handler = handler;
    this.resolveHandlerSet();
  }

  send(terminalId: string, command: TerminalCommand): Promise<void> {
    const existing = this.pending.get(command.command_id);
    if (existing)
      return new Promise((resolve) => {
        const previous = existing.resolve;
        existing.resolve = () => {
          previous();
          resolve();
        };
      });
    return new Promise<void>((resolve) => {
      const pending: PendingCommand = {
        terminalId,
        command,
        resolve,
        timer: setInterval(() => this.publish(pending), this.options.resendMs ?? 10_000),
      };
      pending.timer.unref();
      this.pending.set(command.command_id, pending);
      this.publish(pending);
    });
  }

  private publish(pending: PendingCommand): void {
    if (!this.client?.connected) return;
    this.client.publish(
      terminalTopics(pending.terminalId).command,
      JSON.stringify({ command: pending.command }),
      { qos: 1 },
    );
  }

  private receive(topic: string, payload: Buffer): void {
    const parsed = parseTopic(topic.replace(/^\$share\/[^/]+\//, ''));
    if (!parsed) return;
    const { terminalId, kind } = parsed;
    this.enqueue(terminalId, () => this.apply(terminalId, kind, payload), kind);
  }

  /** Runs `work` after the terminal's earlier messages, in arrival order. */
  private enqueue(terminalId: string, work: () => Promise<void>, kind = 'report'): void {
    const previous = this.queues.get(terminalId) ?? Promise.resolve();
    const next = previous.then(work).catch((error: unknown) => {
      this.options.logger.error({ err: error, terminalId, kind }, 'agent message not applied');
    });
    this.queues.set(terminalId, next);
    void next.then(() => {
      if (this.queues.get(terminalId) === next) this.queues.delete(terminalId);
    });
  }

  private async apply(terminalId: string, kind: string, payload: Buffer): Promise<void> {
    await this.handlerSet;
    const handler = this.handler!;
    const json = safeJson(payload);
    switch (kind) {
      case 'cmd-ack': {
        const ack = CommandAckMessage.safeParse(json);
        if (!ack.success) return this.invalid(terminalId, kind);
        const pending = this.pending.get(ack.data.command_id);
        if (pending) {
          if (pending.terminalId === terminalId) this.settle(ack.data.command_id);
          return;
        }
        // Sent by another relay sharing the agents' traffic (or before a restart).
        await this.options.store.ackCommand(
          terminalId,
          ack.data.command_id,
          this.options.clock.now().toISOString(),
        );
        return;
      }
      case 'report': {
        const message = ReportMessage.safeParse(json);
        if (!message.success) return this.invalid(terminalId, kind);
        const { journal, seq, prev, report } = message.data;
        const position = { journal, seq, ...(prev !== undefined ? { prev } : {}) };
        const last = this.lastReports.get(terminalId);
        if (last && checkReport(last, position) === 'duplicate') {
          this.options.onReportOutcome?.('duplicate');
          return this.ackReport(terminalId, seq);
        }
        if ((await this.tryReport(terminalId, report, position)) === 'gap') {
          return this.hold(terminalId, report, position);
        }
        this.ackReport(terminalId, seq);
        return this.retryHeld(terminalId);
      }
      case 'presence': {
        const presence = PresenceMessage.safeParse(json);
        if (!presence.success) return this.invalid(terminalId, kind);
        await handler(terminalId, {
          type: 'status',
          at: presence.data.at ?? this.options.clock.now().toISOString(),
          readings: { connected: presence.data.connected },
        });
        if (presence.data.connected) {
          for (const pending of this.pending.values()) {
            if (pending.terminalId === terminalId) this.publish(pending);
          }
        }
        return;
      }
    }
  }

  /** Applies a report; the store records its seq in the same commit, or refuses it. */
  private async tryReport(
    terminalId: string,
    report: ReportMessage['report'],
    position: ReportPosition,
  ): Promise<'applied' | 'duplicate' | 'gap'> {
    try {
      await this.handler!(terminalId, report, position);
      this.lastReports.set(terminalId, position);
      this.options.onReportOutcome?.('applied');
      return 'applied';
    } catch (error) {
      if (!(error instanceof ReportOutOfOrder)) throw error;
      if (error.reason === 'duplicate') this.options.onReportOutcome?.('duplicate');
      return error.reason;
    }
  }

  /** Acknowledged after the commit, and again for a redelivered one. */
  private ackReport(terminalId: string, seq: number): void {
    this.client?.publish(terminalTopics(terminalId).reportAck, JSON.stringify({ seq }), {
      qos: 1,
    });
  }

  private hold(terminalId: string, report: ReportMessage['report'], position: ReportPosition) {
    const held = this.held.get(terminalId) ?? new Map<number, HeldReport>();
    this.held.set(terminalId, held);
    clearTimeout(held.get(position.seq)?.timer);
    const timer = setTimeout(() => {
      if (held.get(position.seq)?.timer !== timer) return;
      held.delete(position.seq);
      if (held.size === 0) this.held.delete(terminalId);
      this.options.onReportOutcome?.('gap');
      this.options.logger.warn(
        { terminalId, ...position },
        'report ahead of a missing one: left for the agent to send again',
      );
    }, GAP_WAIT_MS);
    timer.unref();
    held.set(position.seq, { report, position, timer });
  }

  /** Applies held reports whose predecessor has been applied since, in seq order. */
  private async retryHeld(terminalId: string): Promise<void> {
    for (;;) {
      const held = this.held.get(terminalId);
      if (!held) return;
      let progressed = false;
      for (const seq of [...held.keys()].sort((a, b) => a - b)) {
        const entry = held.get(seq)!;
        const outcome = await this.tryReport(terminalId, entry.report, entry.position);
        if (outcome === 'gap') continue;
        clearTimeout(entry.timer);
        held.delete(seq);
        this.ackReport(terminalId, seq);
        progressed = true;
      }
      if (held.size === 0) this.held.delete(terminalId);
      if (!progressed) return;
    }
  }

  private settle(commandId: string): void {
    const pending = this.pending.get(commandId);
    if (!pending) return;
    clearInterval(pending.timer);
    this.pending.delete(commandId);
    pending.resolve();
  }

  private invalid(terminalId: string, kind: string): void {
    this.options.logger.warn({ terminalId, kind }, 'invalid message from agent ignored');
  }

  async close(): Promise<void> {
    this.closing = true;
    this.unwatch();
    for (const held of this.held.values())
      for (const entry of held.values()) clearTimeout(entry.timer);
    this.held.clear();
    for (const pending of this.pending.values()) clearInterval(pending.timer);
    this.pending.clear();
    await Promise.all(this.queues.values());
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
