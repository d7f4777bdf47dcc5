/**
 * What a load balancer and an operator see: health, readiness, Prometheus metrics, and a
 * shutdown that first stops taking traffic, then hands parked long polls back.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { posFor, startTestRelay, type TestRelay } from './support/relay.js';

const origin = (relay: TestRelay) => relay.baseUrl.replace(/\/pos$/, '');
const get = async (relay: TestRelay, path: string) => {
  const res = await fetch(`${origin(relay)}${path}`);
  return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
};
/** The value of one sample line of the Prometheus text, e.g. `tps_leader`. */
const sample = (text: string, series: string) => {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

/** Starts a purchase the simulator is still running and parks a get on it. */
async function parkGet(pos: ReturnType<typeof posFor>, externalId: string, waitSeconds: number) {
  await pos.call('/transaction/purchase', {
    external_id: externalId,
    requested_amount: 1000,
    currency: 'EUR',
    wait_seconds: 0,
  });
  const parked = pos.call('/transaction/get', {
    external_id: externalId,
    wait_seconds: waitSeconds,
  });
  // Time for the get to reach the relay and park.
  await new Promise((resolve) => setTimeout(resolve, 200));
  return { parked };
}

let relay: TestRelay | undefined;
afterEach(async () => {
  await relay?.close();
  relay = undefined;
});

describe('operations endpoints', () => {
  it('answers health and readiness, each readiness check by name', async () => {
    relay = await startTestRelay();
    const health = await get(relay, '/health');
    expect(health.status).toBe(200);
    expect(JSON.parse(health.text)).toEqual({ status: 'ok' });
    const ready = await get(relay, '/ready');
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.text)).toEqual({
      status: 'ready',
      checks: { serving: true, store: true, broker: true },
    });
  });

  it('serves Prometheus metrics: traffic per route, parked long polls, leadership', async () => {
    relay = await startTestRelay({ simulatorDelayMs: 2000 });
    const { parked } = await parkGet(posFor(relay, await relay.newSimulator()), 'm-1', 30);
    const during = await get(relay, '/metrics');
    expect(during.status).toBe(200);
    expect(during.type).toContain('text/plain');
    expect(sample(during.text, 'tps_parked_transaction_polls')).toBe(1);
    expect(sample(during.text, 'tps_leader')).toBe(1);
    expect(sample(during.text, 'tps_ready')).toBe(1);
    expect(sample(during.text, 'tps_broker_connected')).toBe(1);
    expect(
      sample(
        during.text,
        'tps_http_requests_total{method="POST",route="/pos/v1/transaction/purchase",status="200"}',
      ),
    ).toBe(1);
    expect(during.text).toContain('tps_process_resident_memory_bytes');
    expect((await parked).body.transaction.state).toBe('AWAITING_CONFIRM');
    const after = await get(relay, '/metrics');
    expect(sample(after.text, 'tps_parked_transaction_polls')).toBe(0);
    expect(sample(after.text, 'tps_agent_reports_total{outcome="applied"}')).toBeGreaterThan(0);
  });

  it('on shutdown: readiness fails at once while requests are still served, then parked polls are answered', async () => {
    const draining = await startTestRelay({ shutdownDelayS: 1.5, simulatorDelayMs: 60_000 });
    const pos = posFor(draining, await draining.newSimulator());
    const { parked } = await parkGet(pos, 'd-1', 60);
    const began = Date.now();
    const closing = draining.close();
    const ready = await get(draining, '/ready');
    expect(ready.status).toBe(503);
    expect(JSON.parse(ready.text).checks.serving).toBe('shutting down');
    // Still served while the load balancer moves away.
    const served = await pos.call('/transaction/get', { external_id: 'd-1', wait_seconds: 0 });
    expect(served.status).toBe(200);
    const answered = await parked;
    expect(Date.now() - began).toBeGreaterThanOrEqual(1400);
    expect(answered.status).toBe(200);
    expect(answered.body.transaction.state).toBe('PROCESSING');
    await closing;
    await expect(get(draining, '/health')).rejects.toThrow();
  });

  it('a clean shutdown logs no warning or error', async () => {
    const lines: Array<{ level: number; msg: string }> = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n').filter(Boolean))
          lines.push(JSON.parse(line));
        done();
      },
    });
    const quiet = await startTestRelay({ simulatorMode: 'in-process' }, undefined, {
      logger: pino({ level: 'info' }, sink),
    });
    const pos = posFor(quiet, await quiet.newSimulator());
    await pos.call('/transaction/purchase', {
      external_id: 'q-1',
      requested_amount: 100002,
      currency: 'EUR',
    });
    await pos.call('/transaction/confirm', { external_id: 'q-1', result_code: 'SUCCESS' });
    await quiet.close();
    const WARN = 40;
    expect(lines.filter((l) => l.level >= WARN).map((l) => l.msg)).toEqual([]);
  });
});
