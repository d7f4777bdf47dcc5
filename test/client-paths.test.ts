/**
 * The POS client's two paths to a terminal (docs/local-mode.md, "The POS side"): the cloud
 * and the terminal's local address. Here both lead to one relay through a proxy each, so
 * what is tested is the client's choice of path, with the same journal and external_id on
 * both: a request the one path cannot carry goes to the other at once; a path that failed
 * is passed over for a while; a request that may have arrived and is not idempotent is
 * never sent again on the other path.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient, MemoryJournal, PosClient, isTpsError } from '../client/index.js';
import { FaultyProxy } from './support/faulty-proxy.js';
import { startTestRelay, type TestRelay } from './support/relay.js';

let relay: TestRelay;
beforeAll(async () => {
  relay = await startTestRelay({ simulatorDelayMs: 50 });
});
afterAll(async () => {
  await relay.close();
});

/** An address where nothing listens: a port taken and released at once. */
async function closedBaseUrl(): Promise<string> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}/pos`;
}

describe('the cloud and the local path', () => {
  it('pays and confirms on the local path when the cloud cannot be reached, then goes back', async () => {
    const sim = await relay.newSimulator();
    const local = await FaultyProxy.start(relay.baseUrl);
    let now = Date.parse('2026-11-28T10:00:00Z');
    const pos = new PosClient({
      baseUrl: await closedBaseUrl(),
      local: { baseUrl: local.baseUrl, holdMs: 30_000 },
      ...relay.account,
      terminalId: sim.terminal_id,
      journal: new MemoryJournal(),
      waitSeconds: 5,
      timing: { now: () => now, random: () => 0.5, sleep: async () => {} },
    });
    const paid = await pos.pay({ external_id: 'paths-1', requested_amount: 1000, currency: 'EUR' });
    expect(paid.resultCode).toBe('SUCCESS');
    const settled = await paid.settled;
    expect(settled.status === 'settled' && settled.transaction.state).toBe('CONFIRMED');
    expect(local.operations()).toEqual(
      expect.arrayContaining(['/transaction/purchase', '/transaction/confirm']),
    );
    expect(pos.api.nextPath).toBe('local');
    now += 30_001;
    expect(pos.api.nextPath).toBe('cloud');
    await pos.close();
    await local.close();
  });

  it('goes to the local path first when told so, and to the cloud when the agent fails', async () => {
    const sim = await relay.newSimulator();
    const cloud = await FaultyProxy.start(relay.baseUrl);
    const local = await FaultyProxy.start(relay.baseUrl);
    const api = new ApiClient({
      baseUrl: cloud.baseUrl,
      local: { baseUrl: local.baseUrl, prefer: 'local' },
      ...relay.account,
    });
    await api.terminalStatus({ terminal_id: sim.terminal_id });
    expect(local.operations()).toEqual(['/terminal/status']);
    expect(cloud.operations()).toEqual([]);

    // The agent answers 503 (overloaded, shutting down): the same request goes to the cloud.
    local.plan({ match: '/terminal/status', fault: 'unavailable' });
    await api.terminalStatus({ terminal_id: sim.terminal_id });
    expect(cloud.operations()).toEqual(['/terminal/status']);
    expect(api.nextPath).toBe('cloud');
    await cloud.close();
    await local.close();
  });

  it('does not send a continue again on the other path once it may have arrived', async () => {
    const sim = await relay.newSimulator();
    const cloud = await FaultyProxy.start(relay.baseUrl);
    const local = await FaultyProxy.start(relay.baseUrl);
    const api = new ApiClient({
      baseUrl: cloud.baseUrl,
      local: { baseUrl: local.baseUrl },
      ...relay.account,
      timeoutMs: 300,
    });
    // The request reaches the relay; its answer is lost: the outcome is unknown.
    cloud.plan({ match: '/transaction/continue', fault: 'drop-response' });
    const failure = await api
      .continue({ terminal_id: sim.terminal_id, external_id: 'never-made' })
      .catch((error: unknown) => error);
    expect(isTpsError(failure) && (failure.network || failure.timeout)).toBe(true);
    expect(local.operations()).toEqual([]);
    await cloud.close();
    await local.close();
  });

  it('sends a continue on the other path when the cloud refused the connection', async () => {
    const sim = await relay.newSimulator();
    const local = await FaultyProxy.start(relay.baseUrl);
    const api = new ApiClient({
      baseUrl: await closedBaseUrl(),
      local: { baseUrl: local.baseUrl },
      ...relay.account,
    });
    const refusal = await api
      .continue({ terminal_id: sim.terminal_id, external_id: 'never-made' })
      .catch((error: unknown) => error);
    // The relay itself answered (through the local path): the transaction does not exist.
    expect(isTpsError(refusal) && refusal.status).toBeGreaterThanOrEqual(400);
    expect(local.operations()).toEqual(['/transaction/continue']);
    await local.close();
  });

  it('refuses a local address that names another revision', () => {
    expect(
      () =>
        new ApiClient({
          baseUrl: relay.baseUrl,
          local: { baseUrl: 'https://192.0.2.1:8443/pos/v0' },
          ...relay.account,
        }),
    ).toThrow(/names revision v0/);
  });
});
