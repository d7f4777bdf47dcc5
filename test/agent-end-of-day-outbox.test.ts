/**
 * A settlement is a report of the agent's journal outbox like any other: an agent that
 * stops before the relay acknowledged it sends it again after its restart, and the relay
 * applies it once. A real broker (aedes); the reader's end-of-day given by the test.
 */
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../agent/agent.js';
import { ScriptedReader } from '../agent/testing/scripted-reader.js';
import type { ZvtSettlement } from '../firmware-bridge/zvt/reader/settlement.js';
import { agentConfig, startAedes, TestRelay, type TestBroker } from './agent-harness.js';

const silent = pino({ level: 'silent' });
const stops: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

describe('settlement reports', () => {
  it('outlive an agent restart before the relay acknowledged them, and apply once', async () => {
    const broker: TestBroker = await startAedes();
    stops.push(() => broker.stop());
    const relay = new TestRelay(broker.url);
    stops.push(() => relay.close());
    await relay.connected();
    const config = agentConfig({ broker: { url: broker.url, username: 'u', password: 'p' } });
    const closed: ZvtSettlement = { status: 'SUCCESS', total_amount: 990, currency: 'EUR' };
    let runs = 0;
    const start = () =>
      startAgent(config, {
        reader: new ScriptedReader(),
        logger: silent,
        endOfDay: {
          run: async () => {
            runs += 1;
            return closed;
          },
        },
      });
    const settlements = () =>
      relay.applied.map((a) => a.report).filter((r) => r.type === 'settlement');

    relay.holdAcks = true;
    let agent: RunningAgent = await start();
    agent.endOfDay.request('ON_DEMAND');
    await relay.until(
      () => relay.received.some((m) => m.report.type === 'settlement'),
      8000,
      'the settlement sent',
    );
    await agent.stop();

    relay.holdAcks = false;
    agent = await start();
    stops.push(() => agent.stop());
    await relay.until(
      () => relay.received.filter((m) => m.report.type === 'settlement').length >= 2,
      8000,
      'the settlement sent again',
    );
    await relay.until(() => agent.journal.pendingReports().length === 0, 8000, 'the outbox empty');
    expect(runs).toBe(1);
    expect(settlements()).toEqual([
      {
        type: 'settlement',
        settlement: expect.objectContaining({ status: 'SUCCESS', total_amount: 990 }),
      },
    ]);
  }, 30_000);
});
