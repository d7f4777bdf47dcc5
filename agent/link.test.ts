import { mkdtempSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Aedes } from 'aedes';
import Database from 'better-sqlite3';
import mqtt from 'mqtt';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { Timers } from '../common/clock.js';
import { terminalTopics } from '../protocol/mqtt.js';
import type { TerminalReport } from '../protocol/terminal-link.js';
import { Journal } from './journal.js';
import { AgentLink } from './link.js';

const NEVER = 1e9;

/** Timers that only record what they are asked, until the test fires them (NEVER: ignored). */
class RecordingTimers implements Timers {
  readonly waits: number[] = [];
  private readonly pending = new Map<number, () => void>();
  private next = 1;
  setTimeout(callback: () => void, ms: number): unknown {
    if (ms >= NEVER) return 0;
    this.waits.push(ms);
    this.pending.set(this.next, callback);
    return this.next++;
  }
  clearTimeout(handle: unknown): void {
    this.pending.delete(handle as number);
  }
  /** Timers set and not yet fired or cleared. */
  get size(): number {
    return this.pending.size;
  }
  fire(): void {
    const [id, callback] = [...this.pending][0] ?? [];
    if (id === undefined || !callback) throw new Error('no timer pending');
    this.pending.delete(id);
    callback();
  }
}

const until = async (check: () => boolean, what: string) => {
  for (let i = 0; i < 400 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  if (!check()) throw new Error(`timed out waiting for ${what}`);
};

async function freePort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** An aedes broker on `port`; answers how to stop it. */
async function listenBroker(port: number): Promise<() => Promise<void>> {
  const broker = await Aedes.createBroker();
  const server = net.createServer({ noDelay: true }, (socket) => broker.handle(socket));
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', () => resolve()));
  return async () => {
    const closed = new Promise((resolve) => server.close(resolve));
    await new Promise<void>((resolve) => broker.close(() => resolve()));
    await closed;
  };
}

/** The broker settings of terminal `terminalId`'s agent, on the test broker's port. */
const brokerAt = (port: number, terminalId: string) => ({
  url: `mqtt://127.0.0.1:${port}`,
  username: terminalId,
  password: 'x',
  keepalive_s: 30,
});

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

describe('agent link reconnects', () => {
  it('waits a capped, jittered, growing time between attempts; starts over after a stable connection', async () => {
    const port = await freePort();
    const timers = new RecordingTimers();
    let now = Date.parse('2026-03-01T12:00:00.000Z');
    const link = new AgentLink({
      terminalId: 'T-backoff',
      broker: brokerAt(port, 'T-backoff'),
      journal: {
        id: '0123456789abcdef',
        pendingReports: () => [],
        pendingReportTexts: () => [],
        previousReport: () => 0,
        dropReport: () => false,
        commitDrops: () => {},
      },
      onCommand: () => {},
      logger: pino({ level: 'silent' }),
      clock: { now: () => new Date(now) },
      timers,
      backoff: { initialMs: 100, maxMs: 400, random: () => 0.5 },
      resendMs: NEVER,
    });
    cleanups.push(() => link.stop());
    link.start();
    for (let attempt = 1; attempt <= 4; attempt++) {
      await until(() => timers.waits.length === attempt, `attempt ${attempt} to fail`);
      if (attempt < 4) timers.fire();
    }
    // d = 100, 200, 400, 400 (capped); the wait is d/2 + random × d/2.
    expect(timers.waits).toEqual([75, 150, 300, 300]);

    const stopBroker = await listenBroker(port);
    cleanups.push(stopBroker);
    timers.fire();
    await until(() => link.connected, 'connected');

    now += 60_000; // up for a minute: the next outage starts the back-off over
    await stopBroker();
    await until(() => timers.waits.length === 5, 'the next wait');
    expect(timers.waits[4]).toBe(75);
  });
});

describe('agent link commits acknowledged reports', () => {
  it('once, a second after the first report-ack that owed a delete, and not once stopped', async () => {
    const port = await freePort();
    cleanups.push(await listenBroker(port));
    const dataDir = mkdtempSync(path.join(tmpdir(), 'agent-link-'));
    const journal = Journal.open(dataDir);
    cleanups.push(async () => journal.close());
    const done = (id: string): TerminalReport => ({
      type: 'transaction',
      transaction_id: id,
      phase: 'CANCELLED',
      result_code: 'ABORTED',
    });
    journal.record({ reports: [done('a'), done('b'), done('c')] });
    const file = new Database(path.join(dataDir, 'agent.sqlite'), { readonly: true });
    cleanups.push(async () => void file.close());
    const seqsInFile = () =>
      file
        .prepare<[], { seq: number }>('SELECT seq FROM outbox ORDER BY seq')
        .all()
        .map((row) => row.seq);
    const pending = () => journal.pendingReports().map((row) => row.seq);

    const topics = terminalTopics('T-drops');
    const relay = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, { clientId: 'test-relay' });
    cleanups.push(() => relay.endAsync());
    let subscribed = false;
    relay.on('message', (topic, payload) => {
      if (topic === topics.presence && JSON.parse(payload.toString()).connected) subscribed = true;
    });
    await relay.subscribeAsync(topics.presence, { qos: 1 });
    const ack = (seq: number) =>
      relay.publishAsync(topics.reportAck, JSON.stringify({ seq }), { qos: 1 });

    const timers = new RecordingTimers();
    let commands = 0;
    const link = new AgentLink({
      terminalId: 'T-drops',
      broker: brokerAt(port, 'T-drops'),
      journal,
      onCommand: () => commands++,
      logger: pino({ level: 'silent' }),
      clock: { now: () => new Date() },
      timers,
      resendMs: NEVER,
    });
    cleanups.push(() => link.stop());
    link.start();
    // The presence says "connected" once the link has subscribed to its report-acks.
    await until(() => subscribed, 'the link subscribed');

    await ack(1);
    await ack(2);
    await until(() => pending().join() === '3', 'reports 1 and 2 acknowledged');
    expect(timers.waits).toEqual([1000]);
    expect(seqsInFile()).toEqual([1, 2, 3]);
    timers.fire();
    expect(seqsInFile()).toEqual([3]);

    // An ack again (a redelivery) owes nothing: no timer. A command after it tells it was read.
    await ack(1);
    await relay.publishAsync(
      topics.command,
      JSON.stringify({
        command: { type: 'transaction.cancel', command_id: 'c-1', transaction_id: 'a' },
      }),
      { qos: 1 },
    );
    await until(() => commands === 1, 'the command after the ack');
    expect(timers.waits).toEqual([1000]);
    await ack(3);
    await until(() => pending().length === 0, 'report 3 acknowledged');
    expect(timers.waits).toEqual([1000, 1000]);
    await link.stop();
    expect(timers.size).toBe(0);
    expect(seqsInFile()).toEqual([3]);
    journal.close();
    expect(seqsInFile()).toEqual([]);
  });
});

describe('agent link publishes its outbox again', () => {
  it('only once the oldest report has waited a whole period without a report-ack', async () => {
    const port = await freePort();
    cleanups.push(await listenBroker(port));
    const journal = Journal.open(mkdtempSync(path.join(tmpdir(), 'agent-link-')));
    cleanups.push(async () => journal.close());
    const topics = terminalTopics('T-resend');
    const relay = await mqtt.connectAsync(`mqtt://127.0.0.1:${port}`, { clientId: 'test-relay' });
    cleanups.push(() => relay.endAsync());
    const published: number[] = [];
    let subscribed = false;
    relay.on('message', (topic, payload) => {
      const message = JSON.parse(payload.toString());
      if (topic === topics.presence && message.connected) subscribed = true;
      if (topic === topics.report) published.push(message.seq);
    });
    await relay.subscribeAsync([topics.presence, topics.report], { qos: 1 });

    const timers = new RecordingTimers();
    const link = new AgentLink({
      terminalId: 'T-resend',
      broker: brokerAt(port, 'T-resend'),
      journal,
      onCommand: () => {},
      logger: pino({ level: 'silent' }),
      clock: { now: () => new Date() },
      timers,
      resendMs: 10_000,
    });
    cleanups.push(() => link.stop());
    link.start();
    await until(() => subscribed, 'the link subscribed');
    expect(timers.waits).toEqual([10_000]);

    // A report published a moment before the check is not sent again at that check...
    journal.record({
      reports: [
        { type: 'transaction', transaction_id: 'a', phase: 'CANCELLED', result_code: 'ABORTED' },
      ],
    });
    link.flush();
    await until(() => published.length === 1, 'the report published');
    timers.fire();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(published).toEqual([1]);
    // ...but at the next, having waited a whole period with no report-ack.
    timers.fire();
    await until(() => published.length === 2, 'the report published again');
    expect(published).toEqual([1, 1]);
  });
});
