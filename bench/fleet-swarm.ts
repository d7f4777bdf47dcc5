/**
 * A swarm of lightweight agents for the fleet phase (bench/fleet-scale.ts): thousands in
 * one process, each an mqtt.js client that speaks the agent protocol as agent/link.ts
 * does, without the journal, the reader and the executor of a real agent:
 *
 * - client id `agent-<terminal>`, a persistent session, its own credential, a retained
 *   last will `{connected: false}`; at each connect it subscribes to its `cmd` and
 *   `report-ack`, then retains `{connected: true}` and publishes every report not yet
 *   acknowledged (its outbox, in memory);
 * - a status report in the real envelope (journal, seq, prev) every heartbeat period,
 *   the readings unchanged from one beat to the next as on an idle terminal; a report
 *   leaves the outbox on its report-ack;
 * - a `transaction.start` is acknowledged (ACCEPTED) and, `resultDelayMs` later, reported
 *   COMPLETED with SUCCESS; a start already taken (same command id) is acknowledged again
 *   and never charged twice; other commands are acknowledged;
 * - when no report-ack came for a whole 10 s while reports wait, publishes them all again,
 *   as agent/link.ts does (`resendMs`): a report published while no relay was subscribed
 *   (a broker just restarted, before the relays are back) is gone, and the relay holds
 *   every later one as ahead of it;
 * - reconnects with the agent's back-off (500 ms doubling to 60 s, jittered).
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import mqtt, { type MqttClient } from 'mqtt';
import { Backoff } from '../common/backoff.js';
import {
  CommandMessage,
  ReportAckMessage,
  agentClientId,
  terminalTopics,
  type ReportMessage,
  type TerminalReport,
} from '../protocol/index.js';
import { failStart, send, serveParent } from './child-side.js';
import type { SwarmCommand, SwarmStats, SwarmTerminal } from './ipc.js';
import { ErrorTally } from './stats.js';

/** How long an agent's result takes after the start: a card payment's few seconds. */
const RESULT_DELAY_MS = Number(process.env.BENCH_SWARM_RESULT_DELAY_MS ?? 1500);
const READINGS = { connected: true, transaction_state: 'READY', battery_percentage: 80 } as const;
/** agent/link.ts's default `resendMs`. */
const RESEND_MS = 10_000;

interface Counts {
  /** Each report published since the reset: when, and how long its ack took. */
  sent: Map<string, { at: number; ackMs?: number }>;
  ackMs: number[];
}

class SwarmAgent {
  private client: MqttClient | undefined;
  private readonly topics: ReturnType<typeof terminalTopics>;
  private readonly journal = randomBytes(8).toString('hex');
  private seq = 0;
  /** Reports not yet acknowledged, by seq, with when each was last published. */
  private readonly outbox = new Map<number, { body: TerminalReport; sentAt: number }>();
  private readonly commands = new Set<string>();
  private readonly backoff = new Backoff({ initialMs: 500, maxMs: 60_000 });
  private beat: NodeJS.Timeout | undefined;
  private resendCheck: NodeJS.Timeout | undefined;
  /** Report-acks received since the last resend check. */
  private acksSinceCheck = 0;
  reporting = false;

  constructor(
    private readonly terminal: SwarmTerminal,
    private readonly swarm: Swarm,
  ) {
    this.topics = terminalTopics(terminal.id);
  }

  get connected(): boolean {
    return this.client?.connected ?? false;
  }

  connect(brokerUrl: string): void {
    const client = mqtt.connect(brokerUrl, {
      clientId: agentClientId(this.terminal.id),
      username: this.terminal.id,
      password: this.terminal.password,
      clean: false,
      protocolVersion: 4,
      keepalive: 60,
      reconnectPeriod: 0,
      connectTimeout: 10_000,
      will: {
        topic: this.topics.presence,
        payload: Buffer.from('{"connected":false}'),
        qos: 1,
        retain: true,
      },
    });
    this.client = client;
    this.scheduleResendCheck();
    client.on('connect', () => this.onConnect());
    client.on('message', (topic, payload) => this.onMessage(topic, payload));
    client.on('error', (error) => this.swarm.problems.add(`error: ${error.message}`));
    client.on('close', () => {
      this.reporting = false;
      if (this.swarm.stopping) return;
      const delay = this.backoff.next();
      setTimeout(() => client.reconnect(), delay);
    });
  }

  private onConnect(): void {
    const client = this.client!;
    (client.stream as { setNoDelay?: (on: boolean) => void }).setNoDelay?.(true);
    const presence = JSON.stringify({ connected: true, at: new Date().toISOString() });
    client.subscribe(
      { [this.topics.command]: { qos: 1 }, [this.topics.reportAck]: { qos: 1 } },
      () => client.publish(this.topics.presence, presence, { qos: 1, retain: true }),
    );
    for (const seq of this.outbox.keys()) this.publish(seq);
    // A connection up this long counts as good, as the agent's link says (stableAfterMs).
    setTimeout(() => client.connected && this.backoff.reset(), 10_000).unref();
  }

  /** Beats every `periodMs` from a random point of the first period on. */
  schedule(periodMs: number): void {
    clearTimeout(this.beat);
    const tick = () => {
      this.report({ type: 'status', at: new Date().toISOString(), readings: { ...READINGS } });
      this.beat = setTimeout(tick, periodMs);
    };
    this.beat = setTimeout(tick, Math.random() * periodMs);
  }

  /** Every RESEND_MS: reports waiting with no report-ack meanwhile are published again. */
  private scheduleResendCheck(): void {
    this.resendCheck = setTimeout(() => {
      if (this.connected && this.outbox.size > 0 && this.acksSinceCheck === 0) {
        this.swarm.problems.add('no report-ack for 10 s: outbox published again');
        for (const seq of this.outbox.keys()) this.publish(seq);
      }
      this.acksSinceCheck = 0;
      this.scheduleResendCheck();
    }, RESEND_MS);
  }

  stop(): void {
    clearTimeout(this.beat);
    clearTimeout(this.resendCheck);
    this.client?.end(true);
  }

  private report(body: TerminalReport): void {
    const seq = ++this.seq;
    this.outbox.set(seq, { body, sentAt: performance.now() });
    this.publish(seq);
  }

  private publish(seq: number): void {
    const entry = this.outbox.get(seq);
    if (!entry || !this.client?.connected) return;
    let prev = 0;
    for (const waiting of this.outbox.keys()) if (waiting < seq && waiting > prev) prev = waiting;
    const message: ReportMessage = { journal: this.journal, seq, prev, report: entry.body };
    entry.sentAt = performance.now();
    this.swarm.sent(this.key(seq), entry.sentAt);
    this.client.publish(this.topics.report, JSON.stringify(message), { qos: 1 });
  }

  private key(seq: number): string {
    return `${this.terminal.id}/${seq}`;
  }

  private onMessage(topic: string, payload: Buffer): void {
    let value: unknown;
    try {
      value = JSON.parse(payload.toString());
    } catch {
      this.swarm.problems.add('a message that is not JSON');
      return;
    }
    if (topic === this.topics.reportAck) {
      const ack = ReportAckMessage.safeParse(value);
      if (!ack.success || !this.outbox.has(ack.data.seq)) return;
      this.swarm.acked(this.key(ack.data.seq));
      this.outbox.delete(ack.data.seq);
      this.acksSinceCheck++;
      this.reporting = true;
      return;
    }
    const parsed = CommandMessage.safeParse(value);
    if (!parsed.success) {
      this.swarm.problems.add('an invalid command');
      return;
    }
    const { command } = parsed.data;
    const ack = JSON.stringify({ command_id: command.command_id, outcome: 'ACCEPTED' });
    this.client?.publish(this.topics.commandAck, ack, { qos: 1 });
    if (command.type !== 'transaction.start' || this.commands.has(command.command_id)) return;
    this.commands.add(command.command_id);
    if (this.swarm.charge(command.transaction_id) > 1) return;
    const amount = command.requested_amount;
    setTimeout(
      () =>
        this.report({
          type: 'transaction',
          transaction_id: command.transaction_id,
          phase: 'COMPLETED',
          result_code: 'SUCCESS',
          details: { authorized_amount: amount, total_amount: amount },
        }),
      RESULT_DELAY_MS,
    );
  }
}

class Swarm {
  readonly agents: SwarmAgent[] = [];
  readonly problems = new ErrorTally();
  stopping = false;
  private readonly charged = new Map<string, number>();
  private starts = 0;
  private counts: Counts = this.fresh();

  private fresh(): Counts {
    return { sent: new Map(), ackMs: [] };
  }

  sent(key: string, at: number): void {
    this.counts.sent.set(key, { at });
  }

  acked(key: string): void {
    const sent = this.counts.sent.get(key);
    if (!sent || sent.ackMs !== undefined) return;
    sent.ackMs = performance.now() - sent.at;
    this.counts.ackMs.push(sent.ackMs);
  }

  /** Answers how often this transaction has been charged, this time included. */
  charge(transactionId: string): number {
    this.starts++;
    const times = (this.charged.get(transactionId) ?? 0) + 1;
    this.charged.set(transactionId, times);
    return times;
  }

  async run(command: SwarmCommand): Promise<SwarmStats | undefined> {
    switch (command.kind) {
      case 'start': {
        const interval = 1000 / Math.max(1, command.ratePerSecond);
        const started = performance.now();
        for (const [i, terminal] of command.terminals.entries()) {
          const ahead = started + i * interval - performance.now();
          if (ahead > 1) await new Promise((resolve) => setTimeout(resolve, ahead));
          const agent = new SwarmAgent(terminal, this);
          this.agents.push(agent);
          agent.connect(command.brokerUrl);
          agent.schedule(command.heartbeatMs);
        }
        return undefined;
      }
      case 'period':
        for (const agent of this.agents) agent.schedule(command.heartbeatMs);
        return undefined;
      case 'reset':
        this.counts = this.fresh();
        return undefined;
      case 'stats':
        return this.stats();
    }
  }

  private stats(): SwarmStats {
    const dueBefore = performance.now() - 1000;
    let reportsDue = 0;
    let ackedWithin1s = 0;
    for (const { at, ackMs } of this.counts.sent.values()) {
      if (at > dueBefore) continue;
      reportsDue++;
      if (ackMs !== undefined && ackMs <= 1000) ackedWithin1s++;
    }
    return {
      agents: this.agents.length,
      connected: this.agents.filter((a) => a.connected).length,
      reporting: this.agents.filter((a) => a.connected && a.reporting).length,
      reportsDue,
      ackedWithin1s,
      ackMs: this.counts.ackMs,
      starts: this.starts,
      chargedTwice: [...this.charged.values()].filter((n) => n > 1).length,
      problems: this.problems.describe(),
    };
  }
}

const swarm = new Swarm();
try {
  serveParent({
    swarm: (command) => swarm.run(command),
    stop: async () => {
      swarm.stopping = true;
      for (const agent of swarm.agents) agent.stop();
    },
  });
  send({ type: 'ready', origin: '' });
} catch (error) {
  failStart(error);
}
