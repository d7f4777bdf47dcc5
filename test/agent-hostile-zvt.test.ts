/**
 * The agent against a ZVT terminal on TCP that accepts a payment and then sends 8,000-
 * character print lines without end (firmware-bridge/zvt/testing/hostile-pt.ts): the agent
 * in process, as `tps agent` wires it (openHardware, startAgent), on a real broker (aedes)
 * with the test relay. The driver gives the payment up at its bound with the outcome
 * unknown and drops the line; the agent keeps serving: its recovery asks the terminal on a
 * new connection and reports what the terminal recorded, and the next payment goes through.
 */
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { startAgent } from '../agent/agent.js';
import { AgentConfigSchema } from '../agent/config.js';
import { openHardware } from '../agent/hardware.js';
import { DEFAULT_COMMAND_LIMITS } from '../firmware-bridge/zvt/session.js';
import { HostilePt } from '../firmware-bridge/zvt/testing/hostile-pt.js';
import { TestRelay, startAedes, startCommand, tempDir } from './agent-harness.js';

const TERMINAL = 't-1000000077';

const stops: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
});

/** The agent's log lines, as JSON. */
function logInto(lines: Record<string, unknown>[]) {
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) {
        lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      done();
    },
  });
  return pino({ level: 'warn' }, sink);
}

describe('an agent on a ZVT terminal that floods a payment', () => {
  it('gives the payment up as outcome-unknown, recovers it from the terminal, and takes the next payment', async () => {
    const pt = await HostilePt.listen({ flood: 'print-lines' });
    stops.push(() => pt.close());
    const broker = await startAedes();
    stops.push(() => broker.stop());
    const relay = new TestRelay(broker.url);
    stops.push(() => relay.close());
    await relay.connected();

    const dir = tempDir('hostile-zvt');
    const config = AgentConfigSchema.parse({
      terminal_id: TERMINAL,
      broker: { url: broker.url, username: TERMINAL, password: 'agent-secret' },
      reader: { protocol: 'zvt', tcp: `127.0.0.1:${pt.port}` },
      printer: { type: 'none' },
      data_dir: dir,
      log_level: 'warn',
    });
    const log: Record<string, unknown>[] = [];
    const logger = logInto(log);
    const hardware = openHardware(config, logger);
    stops.push(() => hardware.close());
    const agent = await startAgent(config, {
      reader: hardware.reader,
      readerCapabilities: hardware.capabilities,
      logger,
      // Ask the terminal 1 s after a payment went quiet (15 s in the field).
      tuning: { watchMs: 1000, readerRetry: { initialMs: 100, maxMs: 1000 } },
    });
    stops.push(() => agent.stop());
    await relay.until(() => relay.presence.some((p) => p.connected), 10_000, 'agent up');

    relay.send(TERMINAL, startCommand('hz-1', { requested_amount: 1000 }));
    const outcomeUnknown = () =>
      log.find((line) => line.msg === 'ZVT transaction without a known outcome');
    await relay.until(() => outcomeUnknown() !== undefined, 20_000, 'the payment given up');
    expect(outcomeUnknown()).toMatchObject({
      transaction_id: 'hz-1',
      error: expect.stringMatching(/more than 1048576 bytes.*the line was dropped/),
    });
    // The terminal went on past the bound until the agent closed the connection.
    await relay.until(() => pt.floodsEndedByRegister === 1, 10_000, 'the line dropped');
    expect(pt.sent.bytes).toBeGreaterThan(DEFAULT_COMMAND_LIMITS.maxBytes);

    // Recovery, on a new connection: what the terminal recorded (approved), reported once.
    await relay.until(() => relay.final('hz-1') !== undefined, 20_000, 'hz-1 recovered');
    expect(relay.final('hz-1')).toMatchObject({ phase: 'COMPLETED', result_code: 'SUCCESS' });
    expect(pt.connections).toBeGreaterThanOrEqual(2);

    // The agent keeps serving: a payment on the terminal, well-behaved now, goes through.
    pt.behave();
    relay.send(TERMINAL, startCommand('hz-2', { requested_amount: 2000 }));
    await relay.until(() => relay.final('hz-2') !== undefined, 20_000, 'hz-2 result');
    expect(relay.final('hz-2')).toMatchObject({ phase: 'COMPLETED', result_code: 'SUCCESS' });
    for (const id of ['hz-1', 'hz-2']) expect(relay.transaction(id)).toHaveLength(1);
  }, 90_000);
});
