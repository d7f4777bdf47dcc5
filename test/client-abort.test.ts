/**
 * Aborting a payment at each point: while the terminal works, before the create reached
 * the relay (held by the proxy, then delivered late), while waiting for the terminal,
 * after the result (a void), and before anything was sent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryJournal, PosClient, type PosClientOptions } from '../client/index.js';
import { FaultyProxy } from './support/faulty-proxy.js';
import { post, startTestRelay, type TestRelay } from './support/relay.js';

let relay: TestRelay;
/**
 * Clients reach the relay through a proxy that passes everything: an aborted request can
 * leave undici a connection it never uses, and the relay's close() waits for such a
 * connection (see the report); the proxy opens relay connections only for requests.
 */
let direct: FaultyProxy;
beforeAll(async () => {
  relay = await startTestRelay({ simulatorDelayMs: 400 });
  direct = await FaultyProxy.start(relay.baseUrl);
});
afterAll(async () => {
  await direct.close();
  await relay.close();
});

async function newPos(overrides: Partial<PosClientOptions> = {}, baseUrl = direct.baseUrl) {
  const sim = await relay.newSimulator();
  const journal = new MemoryJournal();
  const pos = new PosClient({
    baseUrl,
    ...relay.account,
    terminalId: sim.terminal_id,
    journal,
    waitSeconds: 5,
    backoff: { initialMs: 10, maxMs: 100 },
    ...overrides,
  });
  return { pos, journal, terminalId: sim.terminal_id };
}

const get = (terminalId: string, externalId: string) =>
  post(
    relay.baseUrl,
    'v1',
    '/transaction/get',
    { terminal_id: terminalId, external_id: externalId },
    relay.account,
  );

async function until(check: () => boolean, ms = 3000) {
  const deadline = Date.now() + ms;
  while (!check() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  return check();
}

describe.concurrent('abort', () => {
  it('while the terminal works: pay() rejects ABORTED, the payment is committed as failed and the terminal stops', async () => {
    const { pos, journal, terminalId } = await newPos();
    const controller = new AbortController();
    const paying = pos.pay(
      { external_id: 'a1', requested_amount: 900, currency: 'EUR' },
      { signal: controller.signal },
    );
    // Abort once the relay has the payment and the terminal works on it.
    let state = '';
    while (state !== 'PROCESSING') {
      const read = await post(
        relay.baseUrl,
        'v1',
        '/transaction/get',
        { terminal_id: terminalId, external_id: 'a1', wait_seconds: 0 },
        relay.account,
      );
      state = read.body?.transaction?.state ?? '';
    }
    controller.abort('Customer walked away');
    await expect(paying).rejects.toMatchObject({
      code: 'ABORTED',
      aborted: true,
      externalId: 'a1',
    });
    expect((await journal.get(terminalId, 'a1'))?.abort?.reason).toBe('Customer walked away');
    const settled = await pos.settled('a1');
    expect(settled).toMatchObject({ status: 'settled', aborted: true, resultCode: 'ABORTED' });
    expect(settled.status === 'settled' && settled.transaction).toMatchObject({
      state: 'COMMITTED',
      type: 'PURCHASE',
      result_description: 'Customer walked away',
    });
    // Whatever the terminal had done, it does not stay charged.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const outcome = [...relay.simulators.outcomes(terminalId).values()][0];
    expect([undefined, 'STOPPED', 'REVERSED']).toContain(outcome);
    await pos.drain();
    await pos.close();
  });

  it('before the create reached the relay: the pair is closed as failed, and the late create starts nothing', async () => {
    const proxy = await FaultyProxy.start(relay.baseUrl);
    const { pos, terminalId } = await newPos({}, proxy.baseUrl);
    proxy.plan({ match: '/transaction/purchase', fault: 'stall-request' });
    const paying = pos.pay({ external_id: 'a2', requested_amount: 900, currency: 'EUR' });
    const held = await proxy.waitFor('/transaction/purchase');
    const settling = pos.abort('a2');
    await expect(paying).rejects.toMatchObject({ code: 'ABORTED' });
    expect(await settling).toMatchObject({
      status: 'settled',
      aborted: true,
      resultCode: 'ABORTED',
    });
    expect((await get(terminalId, 'a2')).body.transaction).toMatchObject({
      type: 'UNKNOWN',
      state: 'COMMITTED',
      result_code: 'ABORTED',
    });

    held.release(); // the create arrives after all
    const late = await proxy.waitFor((r) => r.seq === held.request.seq, 'response');
    expect(JSON.parse(late.response!.body).transaction).toMatchObject({
      state: 'COMMITTED',
      result_code: 'ABORTED',
    });
    const status = await post(
      relay.baseUrl,
      'v1',
      '/terminal/status',
      { terminal_id: terminalId },
      relay.account,
    );
    expect(status.body.status.transaction_state).toBe('READY');
    expect(relay.simulators.outcomes(terminalId).size).toBe(0);
    await pos.drain();
    await pos.close();
    await proxy.close();
  });

  it('while waiting for the terminal behind another payment: nothing runs for it', async () => {
    const { pos, terminalId } = await newPos();
    const first = pos.pay({ external_id: 'first', requested_amount: 900, currency: 'EUR' });
    const controller = new AbortController();
    const second = pos.pay(
      { external_id: 'second', requested_amount: 900, currency: 'EUR' },
      { signal: controller.signal },
    );
    controller.abort();
    await expect(second).rejects.toMatchObject({ code: 'ABORTED', externalId: 'second' });
    expect((await first).success).toBe(true);
    expect(await pos.settled('second')).toMatchObject({ status: 'settled', aborted: true });
    expect((await get(terminalId, 'second')).body.transaction.type).toBe('UNKNOWN');
    await pos.drain();
    await pos.close();
  });

  it('after the result: voids the payment, and the terminal reverses it', async () => {
    const { pos, terminalId } = await newPos();
    const paid = await pos.pay({ external_id: 'void', requested_amount: 100002, currency: 'EUR' });
    expect(paid.success).toBe(true);
    await paid.settled;
    const voided = await pos.abort('void', { reason: 'Goods returned at the till' });
    expect(voided).toMatchObject({ status: 'settled', aborted: true, resultCode: 'ABORTED' });
    expect(voided.status === 'settled' && voided.transaction.state).toBe('COMMITTED');
    expect(
      await until(() => [...relay.simulators.outcomes(terminalId).values()].includes('REVERSED')),
    ).toBe(true);
    await pos.drain();
    await pos.close();
  });

  it('before anything was sent: rejects at once and journals nothing', async () => {
    const { pos, journal, terminalId } = await newPos();
    const controller = new AbortController();
    controller.abort();
    await expect(
      pos.pay(
        { external_id: 'never', requested_amount: 900, currency: 'EUR' },
        { signal: controller.signal },
      ),
    ).rejects.toMatchObject({ code: 'ABORTED' });
    expect(await journal.get(terminalId, 'never')).toBeUndefined();
    expect((await get(terminalId, 'never')).status).toBe(404);
    await pos.drain();
    await pos.close();
  });

  it('refuses to abort a payment it does not know', async () => {
    const { pos } = await newPos();
    await expect(pos.abort('nobody')).rejects.toMatchObject({ code: 'UNKNOWN_PAYMENT' });
    await pos.drain();
    await pos.close();
  });
});
