/**
 * What the agent tests share: a real broker (aedes in process on a real TCP port, Nagle
 * off, restartable on the same port; or Mosquitto at MQTT_URL), a test "relay" (an mqtt.js
 * client that publishes commands, re-sends them until acknowledged, applies reports once
 * by seq and acknowledges them), and config files.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Aedes } from 'aedes';
import mqtt, { type MqttClient } from 'mqtt';
import {
  CommandAckMessage,
  PresenceMessage,
  RELAY_SUBSCRIPTIONS,
  ReportMessage,
  parseTopic,
  terminalTopics,
  type TerminalCommand,
  type TerminalReport,
} from '../protocol/index.js';
import type { AgentConfig, AgentConfigInput } from '../agent/config.js';

export interface TestBroker {
  url: string;
  /** Stops the broker (every connection drops); `start()` brings it back on the same port. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Credentials it accepts; anything else is refused (CONNACK 4). */
  readonly users: Map<string, string>;
}

export async function startAedes(): Promise<TestBroker> {
  const users = new Map<string, string>();
  let port = 0;
  let running: { server: net.Server; broker: Aedes } | undefined;
  const start = async () => {
    const broker = await Aedes.createBroker({
      authenticate: (_client, username, password, done) => {
        const ok =
          users.size === 0 ||
          (username !== undefined && users.get(username) === password?.toString());
        if (ok) return done(null, true);
        done(Object.assign(new Error('bad credential'), { returnCode: 4 as const }), false);
      },
    });
    const server = net.createServer({ noDelay: true }, (socket) => broker.handle(socket));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    port = (server.address() as net.AddressInfo).port;
    running = { server, broker };
  };
  await start();
  return {
    url: `mqtt://127.0.0.1:${port}`,
    users,
    start,
    async stop() {
      const current = running;
      running = undefined;
      if (!current) return;
      const closed = new Promise<void>((resolve) => current.server.close(() => resolve()));
      await new Promise<void>((resolve) => current.broker.close(() => resolve()));
      await closed;
    },
  };
}

/** A broker the tests run against: aedes always, Mosquitto when MQTT_URL is set. */
export const BROKERS: Array<{
  name: string;
  open: () => Promise<TestBroker | { url: string; stop(): Promise<void> }>;
}> = [
  { name: 'aedes', open: startAedes },
  ...(process.env.MQTT_URL
    ? [
        {
          name: 'mosquitto',
          open: async () => ({ url: process.env.MQTT_URL!, stop: async () => {} }),
        },
      ]
    : []),
];

interface Pending {
  terminalId: string;
  command: TerminalCommand;
}

/** The relay's side of the link, as the cloud relay does it, small enough to read. */
export class TestRelay {
  readonly client: MqttClient;
  /** Every report as received, duplicates included. */
  readonly received: ReportMessage[] = [];
  /** Reports applied: those with a seq above the last applied one, after their `prev`. */
  readonly applied: Array<{ terminalId: string; seq: number; report: TerminalReport }> = [];
  readonly acks: CommandAckMessage[] = [];
  readonly presence: Array<PresenceMessage & { terminalId: string }> = [];
  /** Stop acknowledging reports (they stay in the agent's outbox). */
  holdAcks = false;
  private readonly pending = new Map<string, Pending>();
  /** The last seq applied, per terminal (each agent numbers its own reports). */
  private readonly lastSeq = new Map<string, number>();
  private readonly waiters = new Set<() => void>();

  constructor(url: string, options: { username?: string; password?: string } = {}) {
    this.client = mqtt.connect(url, {
      clientId: `test-relay-${process.pid}-${Math.random().toString(16).slice(2, 8)}`,
      clean: true,
      protocolVersion: 4,
      reconnectPeriod: 50,
      ...options,
    });
    this.client.on('connect', () => {
      (this.client.stream as net.Socket).setNoDelay?.(true);
      this.client.subscribe(Object.values(RELAY_SUBSCRIPTIONS), { qos: 1 });
      this.resend();
    });
    this.client.on('message', (topic, payload) => this.receive(topic, payload));
    this.client.on('error', () => {});
  }

  connected(): Promise<void> {
    return this.until(() => this.client.connected);
  }

  /** Publishes a command and keeps it until the agent acknowledges it. */
  send(terminalId: string, command: TerminalCommand): void {
    this.pending.set(command.command_id, { terminalId, command });
    this.publish({ terminalId, command });
  }

  /** Publishes a command once, not kept (as a duplicate the relay sends by mistake). */
  publishOnce(terminalId: string, command: TerminalCommand): void {
    this.publish({ terminalId, command });
  }

  /** Transaction reports applied for one transaction, in order. */
  transaction(id: string) {
    return this.applied
      .map((entry) => entry.report)
      .filter(
        (r): r is TerminalReport & { type: 'transaction' } =>
          r.type === 'transaction' && r.transaction_id === id,
      );
  }

  statuses(terminalId?: string) {
    return this.applied
      .filter((entry) => terminalId === undefined || entry.terminalId === terminalId)
      .map((entry) => entry.report)
      .filter((r): r is TerminalReport & { type: 'status' } => r.type === 'status');
  }

  final(id: string) {
    return this.transaction(id).find((r) => r.phase !== 'CUSTOMER_IDENTIFIED');
  }

  ack(commandId: string) {
    return this.acks.find((a) => a.command_id === commandId);
  }

  /** Resolves once `check` holds (re-checked on every message), or fails after `ms`. */
  until(check: () => boolean, ms = 8000, what = 'condition'): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const waiter = () => {
        if (!check()) return;
        this.waiters.delete(waiter);
        clearTimeout(timer);
        clearInterval(poll);
        resolve();
      };
      const timer = setTimeout(() => {
        this.waiters.delete(waiter);
        clearInterval(poll);
        reject(new Error(`timed out waiting for ${what}`));
      }, ms);
      const poll = setInterval(waiter, 20);
      this.waiters.add(waiter);
    });
  }

  async close(): Promise<void> {
    await this.client.endAsync(true);
  }

  private resend(): void {
    for (const pending of this.pending.values()) this.publish(pending);
  }

  private publish({ terminalId, command }: Pending): void {
    this.client.publish(terminalTopics(terminalId).command, JSON.stringify({ command }), {
      qos: 1,
    });
  }

  private receive(topic: string, payload: Buffer): void {
    const parsed = parseTopic(topic);
    if (!parsed || payload.length === 0) return;
    const json: unknown = JSON.parse(payload.toString());
    if (parsed.kind === 'cmd-ack') {
      const ack = CommandAckMessage.parse(json);
      this.acks.push(ack);
      this.pending.delete(ack.command_id);
    } else if (parsed.kind === 'report') {
      const message = ReportMessage.parse(json);
      this.received.push(message);
      // The relay's rule (docs/mqtt.md): once each, and only after the report before it.
      const last = this.lastSeq.get(parsed.terminalId) ?? 0;
      if ((message.prev ?? 0) > last) return; // a gap: not acknowledged, the agent re-sends
      if (message.seq > last) {
        this.lastSeq.set(parsed.terminalId, message.seq);
        this.applied.push({ ...message, terminalId: parsed.terminalId });
      }
      if (!this.holdAcks) {
        this.client.publish(
          terminalTopics(parsed.terminalId).reportAck,
          JSON.stringify({ seq: message.seq }),
          {
            qos: 1,
          },
        );
      }
    } else if (parsed.kind === 'presence') {
      const presence = PresenceMessage.parse(json);
      this.presence.push({ ...presence, terminalId: parsed.terminalId });
      // As the relay does: an agent back online gets every unacknowledged command again.
      if (presence.connected) this.resend();
    }
    for (const waiter of [...this.waiters]) waiter();
  }
}

export function tempDir(prefix: string): string {
  return mkdtempSync(path.join(tmpdir(), `tps-${prefix}-`));
}

export function agentConfig(
  overrides: Partial<AgentConfigInput> & { broker: AgentConfigInput['broker'] },
): AgentConfig {
  return {
    terminal_id: 'T-agent-1',
    reader: { port: '/dev/null', baud_rate: 115_200 },
    printer: { type: 'none' },
    heartbeat_s: 30,
    data_dir: tempDir('agent-data'),
    log_level: 'silent',
    ...overrides,
    broker: { keepalive_s: 30, ...overrides.broker },
  } as AgentConfig;
}

export function writeConfig(dir: string, config: unknown): string {
  const file = path.join(dir, 'agent.json');
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

let commandCounter = 0;
export function startCommand(
  transactionId: string,
  extra: Partial<Extract<TerminalCommand, { type: 'transaction.start' }>> = {},
): Extract<TerminalCommand, { type: 'transaction.start' }> {
  return {
    type: 'transaction.start',
    command_id: `start-${transactionId}-${++commandCounter}`,
    transaction_id: transactionId,
    external_id: `order-${transactionId}`,
    kind: 'PURCHASE',
    requested_amount: 1000,
    currency: 'EUR',
    pause_on_customer_identified: false,
    ...extra,
  };
}

export function command<T extends TerminalCommand['type']>(
  type: T,
  fields: Omit<Extract<TerminalCommand, { type: T }>, 'type' | 'command_id'>,
): Extract<TerminalCommand, { type: T }> {
  return { type, command_id: `${type}-${++commandCounter}`, ...fields } as Extract<
    TerminalCommand,
    { type: T }
  >;
}
