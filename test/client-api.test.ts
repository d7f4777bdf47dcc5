/**
 * ApiClient against a real relay: every operation of both revisions with the shapes of
 * each, errors as TpsError (code, status, flags), and repeats only where they cannot
 * double anything. Faults come from the TCP proxy, never from a stand-in for the relay.
 */
import net from 'node:net';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient, TpsError, type Timing } from '../client/index.js';
import { FaultyProxy } from './support/faulty-proxy.js';
import { startTestRelay, type TestRelay } from './support/relay.js';

let relay: TestRelay;
let direct: FaultyProxy;
let sim: { terminal_id: string; username: string; password: string };
beforeAll(async () => {
  relay = await startTestRelay();
  direct = await FaultyProxy.start(relay.baseUrl);
  sim = await relay.newSimulator();
});
afterAll(async () => {
  await direct.close();
  await relay.close();
});

const png = () => {
  const image = new PNG({ width: 8, height: 8 });
  image.data.fill(255);
  return PNG.sync.write(image).toString('base64');
};

/** Sleeps recorded, not slept: retries run at once. */
const recordingTiming = (sleeps: number[]): Timing => ({
  now: () => Date.now(),
  random: () => 0,
  sleep: async (ms) => {
    sleeps.push(ms);
  },
});

/** The terminal's transaction states as read every 50 ms until READY (at most 15 s). */
async function statesUntilReady(
  api: ApiClient<'v0'> | ApiClient<'v1'>,
  terminal_id: string,
): Promise<string[]> {
  const states: string[] = [];
  for (const deadline = Date.now() + 15_000; Date.now() < deadline;) {
    const { status } = await api.terminalStatus({ terminal_id });
    states.push(status.transaction_state ?? 'none');
    if (status.transaction_state === 'READY') break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return states;
}

describe.each(['v0', 'v1'] as const)('every operation on %s', (revision) => {
  const TIMESTAMP = revision === 'v1' ? /^\S{19}\.\d{3}Z$/ : /^\S{19}Z$/;

  it('purchase, get, unconfirmed, confirm, refund, continue, status and print', async () => {
    const api = new ApiClient({
      baseUrl: direct.baseUrl,
      username: sim.username,
      password: sim.password,
      revision,
    });
    const terminal_id = sim.terminal_id;
    const bought = await api.purchase({
      terminal_id,
      external_id: `${revision}-buy`,
      requested_amount: 100002,
      currency: 'EUR',
    });
    expect(bought.transaction).toMatchObject({ state: 'AWAITING_CONFIRM', result_code: 'SUCCESS' });
    expect(bought.transaction.created_at).toMatch(TIMESTAMP);

    const listed = await api.unconfirmed({ terminal_id });
    expect(listed.transactions.map((t) => t.external_id)).toEqual([`${revision}-buy`]);
    const confirmed = await api.confirm({
      terminal_id,
      external_id: `${revision}-buy`,
      result_code: 'SUCCESS',
    });
    expect(confirmed.transaction.state).toBe('CONFIRMED');

    const refund = await api.refund({
      terminal_id,
      external_id: `${revision}-refund`,
      requested_amount: 2,
      currency: 'EUR',
      original_purchase_external_id: `${revision}-buy`,
    });
    expect(refund.transaction).toMatchObject({ type: 'REFUND', result_code: 'SUCCESS' });
    await api.confirm({ terminal_id, external_id: `${revision}-refund`, result_code: 'SUCCESS' });
    const read = await api.get({
      terminal_id,
      external_id: `${revision}-buy`,
      options: { extra_amounts: true },
    });
    const refundable =
      revision === 'v1'
        ? (read.transaction as { extra_amounts?: { refundable_amount?: number } }).extra_amounts
            ?.refundable_amount
        : (read.transaction as { refundable_amount?: number }).refundable_amount;
    expect(refundable).toBe(100000);

    const paused = await api.purchase({
      terminal_id,
      external_id: `${revision}-pause`,
      requested_amount: 700,
      currency: 'EUR',
      options: { on_customer_identified: { pause: true } },
    });
    expect(paused.transaction.state).toBe('AWAITING_CONTINUE');
    const continued = await api.continue({
      terminal_id,
      external_id: `${revision}-pause`,
      requested_amount: 650,
    });
    expect(continued.transaction).toMatchObject({ state: 'AWAITING_CONFIRM', total_amount: 650 });
    await api.confirm({ terminal_id, external_id: `${revision}-pause`, result_code: 'ABORTED' });

    // The aborted payment was charged: the terminal reverses it, BUSY meanwhile, then READY.
    const states = await statesUntilReady(api, terminal_id);
    expect(states.at(-1)).toBe('READY');
    expect(new Set(states.slice(0, -1))).toEqual(new Set(states.length > 1 ? ['BUSY'] : []));
    const { status } = await api.terminalStatus({ terminal_id });
    expect(status).toMatchObject({ terminal_id, transaction_state: 'READY' });
    expect(await api.print({ terminal_id, format: 'PNG', contents: png() })).toEqual({
      queued: true,
    });
  });
});

describe('simulators', () => {
  it('an account credential creates one; a terminal credential is FORBIDDEN', async () => {
    const account = new ApiClient({ baseUrl: direct.baseUrl, ...relay.account });
    expect((await account.createSimulator()).terminal_id).toMatch(/^t-19\d{8}$/);
    const terminal = new ApiClient({ baseUrl: direct.baseUrl, ...sim });
    await expect(terminal.createSimulator()).rejects.toMatchObject({
      code: 'FORBIDDEN',
      status: 403,
      retryable: false,
    });
  });
});

describe('errors', () => {
  const api = (overrides: Partial<ConstructorParameters<typeof ApiClient>[0]> = {}) =>
    new ApiClient({ baseUrl: direct.baseUrl, ...relay.account, ...overrides });

  it('carry the service code and status: 401, 404, 400', async () => {
    await expect(
      api({ password: 'wrong-password' }).terminalStatus({ terminal_id: sim.terminal_id }),
    ).rejects.toMatchObject({ code: 'UNAUTHORIZED', status: 401, retryable: false });
    await expect(
      api().get({ terminal_id: sim.terminal_id, external_id: 'none' }),
    ).rejects.toMatchObject({ code: 'NOT_FOUND', status: 404 });
    const error = await api()
      .purchase({ terminal_id: 't-404', external_id: 'x', requested_amount: 1, currency: 'EUR' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TpsError);
    expect(error).toMatchObject({ code: 'TERMINAL_NOT_FOUND', status: 400, network: false });
  });

  it('refuse a body that breaks the schema before sending anything', async () => {
    const proxy = await FaultyProxy.start(relay.baseUrl);
    const local = api({ baseUrl: proxy.baseUrl });
    await expect(
      local.purchase({
        terminal_id: sim.terminal_id,
        external_id: 'has space',
        requested_amount: -1,
        currency: 'eur',
      }),
    ).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/(?=.*external_id)(?=.*requested_amount)(?=.*currency)/s),
    });
    expect(proxy.exchanges).toEqual([]);
    await proxy.close();
  });

  it('refuse a base URL naming another revision than the client', () => {
    expect(() => api({ baseUrl: `${relay.baseUrl}/v0` })).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }) as Error,
    );
    expect(api({ baseUrl: `${relay.baseUrl}/v0/`, revision: 'v0' }).url).toBe(
      `${relay.baseUrl}/v0`,
    );
  });

  it('flag a refused connection as network, and repeat a read a few times', async () => {
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const sleeps: number[] = [];
    const error = await api({
      baseUrl: `http://127.0.0.1:${port}/pos`,
      timing: recordingTiming(sleeps),
      retry: { maxAttempts: 3 },
    })
      .terminalStatus({ terminal_id: sim.terminal_id })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'NETWORK_ERROR', network: true, retryable: true });
    expect((error as TpsError).status).toBeUndefined();
    expect(sleeps).toHaveLength(2);
  });

  it('flag a request without an answer in time as timeout', async () => {
    const proxy = await FaultyProxy.start(relay.baseUrl);
    proxy.plan({ match: '/terminal/status', fault: 'stall-response' });
    const error = await api({ baseUrl: proxy.baseUrl, timeoutMs: 150 })
      .terminalStatus({ terminal_id: sim.terminal_id }, { retry: false })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 'TIMEOUT',
      timeout: true,
      network: false,
      retryable: true,
    });
    await proxy.close();
  });

  it('stop at once, flagged aborted, when the caller aborts', async () => {
    const proxy = await FaultyProxy.start(relay.baseUrl);
    proxy.plan({ match: '/terminal/status', fault: 'stall-request' });
    const controller = new AbortController();
    const asking = api({ baseUrl: proxy.baseUrl }).terminalStatus(
      { terminal_id: sim.terminal_id },
      { signal: controller.signal },
    );
    await proxy.waitFor('/terminal/status');
    controller.abort();
    await expect(asking).rejects.toMatchObject({
      code: 'ABORTED',
      aborted: true,
      retryable: false,
    });
    await proxy.close();
  });

  it('repeat a 503 after its Retry-After, and lost creates and confirms', async () => {
    const proxy = await FaultyProxy.start(relay.baseUrl);
    proxy
      .plan({ match: '/transaction/purchase', fault: 'unavailable', retryAfterS: 1 })
      .plan({ match: '/transaction/purchase', fault: 'drop-response' })
      .plan({ match: '/transaction/confirm', fault: 'drop-request' });
    const sleeps: number[] = [];
    const client = api({ baseUrl: proxy.baseUrl, timing: recordingTiming(sleeps) });
    const bought = await client.purchase({
      terminal_id: sim.terminal_id,
      external_id: 'retried',
      requested_amount: 100002,
      currency: 'EUR',
    });
    expect(bought.transaction.result_code).toBe('SUCCESS');
    expect(sleeps[0]).toBe(1000);
    const confirmed = await client.confirm({
      terminal_id: sim.terminal_id,
      external_id: 'retried',
      result_code: 'SUCCESS',
    });
    expect(confirmed.transaction.state).toBe('CONFIRMED');
    expect(proxy.operations()).toEqual([
      '/transaction/purchase',
      '/transaction/purchase',
      '/transaction/purchase',
      '/transaction/confirm',
      '/transaction/confirm',
    ]);
    await proxy.close();
  });

  it('never repeat a continue or a print', async () => {
    const proxy = await FaultyProxy.start(relay.baseUrl);
    proxy
      .plan({ match: '/transaction/continue', fault: 'drop-request', times: 5 })
      .plan({ match: '/terminal/print', fault: 'drop-request', times: 5 });
    const client = api({ baseUrl: proxy.baseUrl, timing: recordingTiming([]) });
    await expect(
      client.continue({ terminal_id: sim.terminal_id, external_id: 'x' }),
    ).rejects.toMatchObject({ code: 'NETWORK_ERROR' });
    await expect(
      client.print({ terminal_id: sim.terminal_id, format: 'PNG', contents: png() }),
    ).rejects.toMatchObject({ code: 'NETWORK_ERROR' });
    expect(proxy.operations()).toEqual(['/transaction/continue', '/terminal/print']);
    await proxy.close();
  });
});
