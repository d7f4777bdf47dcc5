/**
 * Noise on the serial line, end to end: a POS over HTTP, the relay in process with its
 * embedded broker, an agent in process (startAgent, as `tps agent` wires it) whose card
 * reader is the emulated firmware behind a noisy in-memory serial line (bytes dropped, bits
 * flipped, garbage injected, deliveries split), both directions. The serial protocol must
 * repair all of it: every payment ends with the reader's own result, each run once, and the
 * reader's battery and charger changes reach the terminal status answer.
 *
 * The faults come from a seeded generator: the same rates and the same pattern each run
 * (which bytes are hit still varies with timing). The line's own counters prove the damage
 * was done; the reader's decoder, that damaged frames were caught.
 */
import pino from 'pino';
import { rmSync } from 'node:fs';
import type { Duplex } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi, type MockInstance } from 'vitest';
import { startAgent, type RunningAgent } from '../agent/agent.js';
import { AgentConfigSchema } from '../agent/config.js';
import { emulatedReader, type EmulatedReader } from '../agent/emulated-reader.js';
import type { SerialLink } from '../firmware-bridge/serial/link.js';
import type * as StreamPairModule from '../firmware-bridge/serial/stream-pair.js';
import type { LineFaults, StreamPair } from '../firmware-bridge/serial/stream-pair.js';
import type { TerminalCreateResponse } from '../protocol/api.js';
import { eventually, posFor, registerTerminal } from './support/e2e-parts.js';
import { startTestRelay, tempDataDir, type TestRelay } from './support/relay.js';

/** Every serial line the emulated reader makes (one per connection of the agent). */
const lines = vi.hoisted(() => [] as StreamPair[]);
vi.mock('../firmware-bridge/serial/stream-pair.js', async (importOriginal) => {
  const actual = await importOriginal<typeof StreamPairModule>();
  return {
    ...actual,
    createStreamPair: (...args: Parameters<typeof actual.createStreamPair>) => {
      const pair = actual.createStreamPair(...args);
      lines.push(pair);
      return pair;
    },
  };
});

/**
 * Per byte. A result frame (receipts and all) is ≈ 3 KB: at these rates almost half of
 * them arrive damaged and are sent again; garbage lands before almost one write in three,
 * and every write arrives in pieces of 1-9 bytes.
 */
const READER_TO_HOST: LineFaults = {
  dropRate: 0.0001,
  flipRate: 0.0001,
  garbageRate: 0.3,
  maxChunk: 9,
  // The rates above leave a run without a lost byte now and then (the writes, and so
  // the draws, follow the timing): one write in 20 loses one whatever they draw.
  dropInEveryNthWrite: 20,
};
/** Host frames are small (commands, ACKs): harsher rates, most still get through. */
const HOST_TO_READER: LineFaults = {
  dropRate: 0.0015,
  flipRate: 0.0015,
  garbageRate: 0.3,
  maxChunk: 5,
  dropInEveryNthWrite: 20,
};

describe('e2e: noise and dropped bytes on the serial line, recovered by the protocol', () => {
  let relay: TestRelay;
  let emulated: EmulatedReader;
  let agent: RunningAgent;
  let terminal: TerminalCreateResponse;
  let pos: ReturnType<typeof posFor>;
  /** Records the reader end of every serial link the agent opened, for its counters. */
  const agentDataDir = tempDataDir();
  let serve: MockInstance<(port: Duplex) => SerialLink<'reader'>>;

  beforeAll(async () => {
    relay = await startTestRelay();
    terminal = await registerTerminal(relay.baseUrl, relay.account, { battery: true });
    emulated = emulatedReader({
      delayMs: 30,
      battery: { percentage: 64 },
      // The host (a = the agent's driver) and the reader (b) on a noisy cable.
      line: { seed: 20_251_121, aToB: HOST_TO_READER, bToA: READER_TO_HOST },
    });
    // Each connection the agent opens is served by the firmware: keep its reader-end link.
    serve = vi.spyOn(emulated.firmware, 'serve');
    const config = AgentConfigSchema.parse({
      terminal_id: terminal.terminal_id,
      broker: {
        url: terminal.agent.broker_url,
        username: terminal.agent.username,
        password: terminal.agent.password,
      },
      // The reader is handed to startAgent below (in memory); the config must still name one.
      reader: { port: 'emulated-stream-pair' },
      data_dir: agentDataDir,
      log_level: 'silent',
    });
    agent = await startAgent(config, {
      reader: emulated.reader,
      logger: pino({ level: process.env.TEST_LOG ? 'debug' : 'silent' }),
    });
    pos = posFor(() => relay.baseUrl, terminal);
    await eventually(
      () => pos('/terminal/status', {}),
      (r) => r.body?.status?.connected === true && r.body.status.battery_percentage === 64,
      { what: 'the terminal connected with the reader’s battery' },
    );
  });

  afterAll(async () => {
    await agent?.stop();
    await emulated?.close();
    await relay?.close();
    for (const dir of [agentDataDir, relay?.dataDir]) {
      if (dir) rmSync(dir, { recursive: true, force: true });
    }
  });

  it('several purchases complete with the reader’s results despite the noise', async () => {
    // Ordinary successes, a decline, a tip and a pause-and-continue: the amounts pick them.
    const cases: Array<{
      amount: number;
      code: string;
      total?: number;
      tip?: boolean;
      pauseThenContinueWith?: number;
    }> = [
      { amount: 1234, code: 'SUCCESS', total: 1234 },
      { amount: 100006, code: 'DECLINED_BY_ISSUER' },
      { amount: 2500, code: 'SUCCESS', total: 2500 },
      { amount: 100017, code: 'SUCCESS', tip: true },
      { amount: 990, code: 'SUCCESS', total: 1200, pauseThenContinueWith: 1200 },
      { amount: 4321, code: 'SUCCESS', total: 4321 },
    ];
    for (const [index, c] of cases.entries()) {
      const externalId = `noise-${index}`;
      let answer = await pos('/transaction/purchase', {
        external_id: externalId,
        requested_amount: c.amount,
        currency: 'EUR',
        wait_seconds: 10,
        ...(c.pauseThenContinueWith
          ? { options: { on_customer_identified: { pause: true } } }
          : {}),
      });
      if (c.pauseThenContinueWith) {
        expect(answer.body.transaction.state, externalId).toBe('AWAITING_CONTINUE');
        answer = await pos('/transaction/continue', {
          external_id: externalId,
          requested_amount: c.pauseThenContinueWith,
          wait_seconds: 10,
        });
      }
      const transaction = answer.body.transaction;
      expect(transaction, externalId).toMatchObject({
        state: 'AWAITING_CONFIRM',
        result_code: c.code,
        ...(c.total !== undefined ? { total_amount: c.total } : {}),
      });
      if (c.tip) {
        expect(transaction.tip_amount).toBeGreaterThan(0);
        expect(transaction.total_amount).toBe(c.amount + transaction.tip_amount);
      }
      // What the POS got is what the reader recorded, and the reader ran it once.
      const record = emulated.firmware.memory.get(transaction.id);
      expect(record, externalId).toMatchObject({ phase: 'COMPLETED', result_code: c.code });
      expect(transaction.reference).toBe(record?.details?.reference);
      expect(transaction.total_amount).toBe(record?.details?.total_amount);
      const confirmed = await pos('/transaction/confirm', {
        external_id: externalId,
        result_code: transaction.result_code,
      });
      expect(confirmed.status).toBe(200);
    }
    // One run each, in order: the reader's sequence numbers are 1..n, none repeated.
    const runs = emulated.firmware.memory
      .all()
      .filter((r) => r.sequence > 0)
      .map((r) => r.sequence)
      .sort((a, b) => a - b);
    expect(runs).toEqual(cases.map((_, i) => i + 1));

    // It really was noisy: the line lost, flipped and invented bytes both ways...
    expect(lines.length).toBeGreaterThan(0);
    const damage = { lost: 0, flipped: 0, garbageToReader: 0, garbageToHost: 0 };
    for (const { stats } of lines) {
      damage.lost += stats.aToB.droppedBytes + stats.bToA.droppedBytes;
      damage.flipped += stats.aToB.flippedBytes + stats.bToA.flippedBytes;
      damage.garbageToReader += stats.aToB.garbageBytes;
      damage.garbageToHost += stats.bToA.garbageBytes;
    }
    const report = JSON.stringify({ damage, lines: lines.map((l) => l.stats) });
    expect(damage.lost + damage.flipped, report).toBeGreaterThan(0);
    expect(damage.garbageToReader, report).toBeGreaterThan(0);
    expect(damage.garbageToHost, report).toBeGreaterThan(0);
    // ...and the reader's decoder caught what reached it damaged (the agent's side did the
    // same, or no result above would have parsed).
    const readerLinks = serve.mock.results.map((r) => (r.value as SerialLink<'reader'>).stats);
    const caught = readerLinks.reduce((n, s) => n + s.decoder.droppedBytes, 0);
    expect(caught, JSON.stringify(readerLinks)).toBeGreaterThan(0);
  }, 60_000);

  it('battery and charger changes on the reader reach /terminal/status through the noise', async () => {
    emulated.firmware.setBattery(41);
    emulated.firmware.plug(true);
    const charging = await eventually(
      () => pos('/terminal/status', {}),
      (r) => r.body.status.battery_percentage === 41 && r.body.status.plugged_in === true,
      { what: 'the new battery reading and the charger' },
    );
    expect(charging.body.status).toMatchObject({
      connected: true,
      battery_percentage: 41,
      battery_charging: true,
      plugged_in: true,
      transaction_state: 'READY',
    });
    emulated.firmware.plug(false);
    const unplugged = await eventually(
      () => pos('/terminal/status', {}),
      (r) => r.body.status.plugged_in === false,
      { what: 'the charger pulled' },
    );
    expect(unplugged.body.status).toMatchObject({
      battery_percentage: 41,
      battery_charging: false,
    });
  });
});
