/**
 * The link across outages: the broker stopped and started again on the same port while
 * payments go on, and the agent offline while the relay sends. aedes only: these tests
 * stop the broker, and its sessions live in its memory (as the embedded broker's do).
 */
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { InMemoryReaderMemory } from '../firmware-bridge/emulator/reader-memory.js';
import { ManualTimers } from '../common/testing/manual-timers.js';
import { startAgent } from '../agent/agent.js';
import { emulatedReader } from '../agent/emulated-reader.js';
import {
  TestRelay,
  agentConfig,
  command,
  startAedes,
  startCommand,
  tempDir,
  type TestBroker,
} from './agent-harness.js';

const silent = pino({ level: 'silent' });
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup() {
  const broker = await startAedes();
  const relay = new TestRelay(broker.url);
  cleanups.push(async () => {
    await relay.close();
    await broker.stop();
  });
  await relay.connected();
  return { broker, relay };
}

async function runAgent(
  broker: TestBroker,
  dataDir: string,
  memory: InMemoryReaderMemory,
  readerTimers?: ManualTimers,
) {
  const emulated = emulatedReader({
    memory,
    delayMs: 20,
    battery: false,
    ...(readerTimers ? { timers: readerTimers } : {}),
  });
  const config = agentConfig({
    terminal_id: 'T-reconnect',
    data_dir: dataDir,
    broker: { url: broker.url, username: 'T-reconnect', password: 'x' },
  });
  const agent = await startAgent(config, {
    reader: emulated.reader,
    logger: silent,
    tuning: { reconnect: { initialMs: 20, maxMs: 100 }, reportResendMs: 200 },
  });
  const stop = async () => {
    await agent.stop();
    await emulated.close();
  };
  cleanups.push(stop);
  return { agent, emulated, stop };
}

describe('agent link across outages', () => {
  it('delivers reports made while the broker was down, in order, once each, and a command sent meanwhile', async () => {
    const { broker, relay } = await setup();
    const memory = new InMemoryReaderMemory();
    // The reader moves only when the test says so: its results come while the broker is down.
    const readerTimers = new ManualTimers();
    const { agent } = await runAgent(broker, tempDir('reconnect'), memory, readerTimers);
    await relay.until(() => agent.link.connected);

    const a = startCommand('tx-off-a');
    const b = startCommand('tx-off-b', { pause_on_customer_identified: true });
    relay.send('T-reconnect', a);
    relay.send('T-reconnect', b);
    await relay.until(
      () => relay.ack(a.command_id) !== undefined && relay.ack(b.command_id) !== undefined,
    );

    await broker.stop();
    // While it is down the reader finishes A and pauses B: two reports, plus statuses.
    const step = async (done: () => boolean, what: string) => {
      for (let i = 0; i < 50 && !done(); i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
        readerTimers.fireNext();
      }
      if (!done()) throw new Error(`the reader did not get to: ${what}`);
    };
    await step(() => memory.get('tx-off-a')?.phase === 'COMPLETED', 'A done');
    await step(() => memory.get('tx-off-b')?.phase === 'CUSTOMER_IDENTIFIED', 'B paused');
    await relay.until(
      () =>
        agent.journal.pendingReports().filter((r) => r.report.type === 'transaction').length === 2,
      5000,
      'two reports journaled',
    );
    expect(relay.final('tx-off-a')).toBeUndefined();
    // The relay sends while the broker is down: its outbox holds it until acknowledged.
    const c = startCommand('tx-off-c');
    relay.send('T-reconnect', c);

    await broker.start();
    await relay.until(
      () => relay.transaction('tx-off-b').length > 0 && relay.ack(c.command_id) !== undefined,
      8000,
      'catch-up',
    );
    // C waits behind the paused B until the relay continues B.
    relay.send('T-reconnect', command('transaction.continue', { transaction_id: 'tx-off-b' }));
    await step(() => memory.get('tx-off-c')?.phase === 'COMPLETED', 'C done');
    await relay.until(() => relay.final('tx-off-c') !== undefined, 5000, 'C reported');
    const mine = relay.applied.filter((entry) => entry.report.type === 'transaction');
    expect(
      mine.map(
        (entry) =>
          entry.report.type === 'transaction' &&
          `${entry.report.transaction_id} ${entry.report.phase}`,
      ),
    ).toEqual([
      'tx-off-a COMPLETED',
      'tx-off-b CUSTOMER_IDENTIFIED',
      'tx-off-b COMPLETED',
      'tx-off-c COMPLETED',
    ]);
    const seqs = relay.applied.map((entry) => entry.seq);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    // Anything received twice (re-sent after the reconnect) was applied once.
    expect(relay.received.length).toBeGreaterThanOrEqual(relay.applied.length);
    await relay.until(() => agent.journal.pendingReports().length === 0, 5000, 'outbox drained');
    for (const id of ['tx-off-a', 'tx-off-b', 'tx-off-c'])
      expect(memory.get(id)?.sequence).toBeGreaterThan(0);
    expect(new Set(memory.all().map((r) => r.sequence)).size).toBe(3);
  });

  it('gets a command sent while it was offline from its persistent session', async () => {
    const { broker, relay } = await setup();
    const memory = new InMemoryReaderMemory();
    const dataDir = tempDir('session');
    const first = await runAgent(broker, dataDir, memory);
    await relay.until(() => first.agent.link.connected);
    await first.stop();
    await relay.until(() => relay.presence.at(-1)?.connected === false, 5000, 'offline presence');

    const start = startCommand('tx-session');
    relay.publishOnce('T-reconnect', start); // not re-sent by the relay: only the session has it
    await new Promise((resolve) => setTimeout(resolve, 50));
    const second = await runAgent(broker, dataDir, memory);
    await relay.until(() => relay.final('tx-session') !== undefined, 5000, 'result');
    expect(relay.ack(start.command_id)?.outcome).toBe('ACCEPTED');
    expect(relay.presence.at(-1)?.connected).toBe(true);
    expect(second.agent.journal.lastSeq()).toBeGreaterThan(0);
  });
});
