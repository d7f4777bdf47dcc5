/**
 * PosClient against a real relay with simulated terminals: the basic client flow, the
 * journal, refunds, the terminal's limits (TERMINAL_BUSY, TOO_MANY_UNCONFIRMED), a result
 * conflict, recovery and adoption.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryJournal, PosClient, TpsError, type PosClientOptions } from '../client/index.js';
import { FaultyProxy } from './support/faulty-proxy.js';
import { post, startTestRelay, type TestRelay } from './support/relay.js';

let relay: TestRelay;
/** Passes everything; see client-abort.test.ts for why clients do not talk to the relay directly. */
let direct: FaultyProxy;
beforeAll(async () => {
  relay = await startTestRelay({ maxUnconfirmed: 2 });
  direct = await FaultyProxy.start(relay.baseUrl);
});
afterAll(async () => {
  await direct.close();
  await relay.close();
});

const INSTANT = 100002;
const DECLINED = 100006;

const tempJournal = () =>
  path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tps-journal-')), 'pos.sqlite');

/** A client on a new simulated terminal, with quick back-off; the account credential reaches it. */
async function newPos(overrides: Partial<PosClientOptions> = {}, baseUrl = direct.baseUrl) {
  const sim = await relay.newSimulator();
  const pos = new PosClient({
    baseUrl,
    ...relay.account,
    terminalId: sim.terminal_id,
    journal: new MemoryJournal(),
    waitSeconds: 5,
    backoff: { initialMs: 10, maxMs: 100 },
    retry: { initialMs: 5, maxMs: 20 },
    ...overrides,
  });
  return { pos, terminalId: sim.terminal_id };
}

/** The relay as a POS sees it, with the account credential. */
const api = (operation: string, body: Record<string, unknown>) =>
  post(relay.baseUrl, 'v1', operation, body, relay.account);

/** Every transaction the relay holds for a terminal (read from its store, read-only). */
function relayTransactions(terminalId: string): Array<{ external_id: string; state: string }> {
  const db = new Database(path.join(relay.dataDir, 'relay.sqlite'), { readonly: true });
  try {
    return db
      .prepare('SELECT external_id, state FROM transactions WHERE terminal_id = ? ORDER BY id')
      .all(terminalId) as Array<{ external_id: string; state: string }>;
  } finally {
    db.close();
  }
}

describe('pay', () => {
  it('journals the external_id before the first request, returns the result with receipts, confirms in the background', async () => {
    const proxy = await FaultyProxy.start(relay.baseUrl);
    const journal = new MemoryJournal();
    const { pos, terminalId } = await newPos({ journal }, proxy.baseUrl);
    const paying = pos.pay({ external_id: 'order-1', requested_amount: 1000, currency: 'EUR' });
    await proxy.waitFor('/transaction/purchase');
    expect((await journal.get(terminalId, 'order-1'))?.phase).toBe('STARTED');

    const result = await paying;
    expect(result).toMatchObject({ externalId: 'order-1', success: true, resultCode: 'SUCCESS' });
    expect(result.transaction.state).toBe('AWAITING_CONFIRM');
    expect(result.receipts.customer).toMatch(/APPROVED/);
    expect(result.receipts.merchant).toMatch(/MERCHANT COPY/);

    const settled = await result.settled;
    expect(settled).toMatchObject({ status: 'settled', success: true, aborted: false });
    expect(settled.status === 'settled' && settled.transaction.state).toBe('CONFIRMED');
    expect((await journal.get(terminalId, 'order-1'))?.phase).toBe('SETTLED');
    expect(relayTransactions(terminalId)).toEqual([{ external_id: 'order-1', state: 'CONFIRMED' }]);
    expect(proxy.operations()).toEqual(['/transaction/purchase', '/transaction/confirm']);
    await pos.close();
    await proxy.close();
  });

  it('hands a decline to the caller and confirms it as the failure it is', async () => {
    const { pos, terminalId } = await newPos();
    const result = await pos.pay({ requested_amount: DECLINED, currency: 'EUR' });
    expect(result).toMatchObject({ success: false, resultCode: 'DECLINED_BY_ISSUER' });
    expect(result.receipts.customer).toMatch(/DECLINED|NOT|FAILED/i);
    const settled = await result.settled;
    expect(settled).toMatchObject({
      status: 'settled',
      success: false,
      resultCode: 'DECLINED_BY_ISSUER',
    });
    const read = await api('/transaction/get', {
      terminal_id: terminalId,
      external_id: result.externalId,
    });
    expect(read.body.transaction).toMatchObject({
      state: 'COMMITTED',
      result_code: 'DECLINED_BY_ISSUER',
    });
    await pos.close();
  });

  it('refunds a confirmed purchase', async () => {
    const { pos } = await newPos();
    const purchase = await pos.pay({
      external_id: 'buy',
      requested_amount: INSTANT,
      currency: 'EUR',
    });
    await purchase.settled;
    const refund = await pos.refund({
      external_id: 'give-back',
      requested_amount: 500,
      currency: 'EUR',
      original_purchase_external_id: 'buy',
    });
    expect(refund.transaction).toMatchObject({ type: 'REFUND', result_code: 'SUCCESS' });
    expect(refund.receipts.customer).toMatch(/REFUND/);
    expect(await refund.settled).toMatchObject({ status: 'settled', success: true });
    await pos.close();
  });

  it('answers a repeated pay() from the journal, and refuses the same external_id for another amount', async () => {
    const { pos, terminalId } = await newPos();
    const first = await pos.pay({
      external_id: 'same',
      requested_amount: INSTANT,
      currency: 'EUR',
    });
    await first.settled;
    const again = await pos.pay({
      external_id: 'same',
      requested_amount: INSTANT,
      currency: 'EUR',
    });
    expect(again.transaction.id).toBe(first.transaction.id);
    await expect(
      pos.pay({ external_id: 'same', requested_amount: 1, currency: 'EUR' }),
    ).rejects.toMatchObject({ code: 'JOURNAL_CONFLICT' });
    expect(relayTransactions(terminalId)).toHaveLength(1);
    await pos.close();
  });

  it('runs payments on one terminal one after another instead of answering TERMINAL_BUSY', async () => {
    const { pos, terminalId } = await newPos();
    const results = await Promise.all([
      pos.pay({ external_id: 'q1', requested_amount: 700, currency: 'EUR' }),
      pos.pay({ external_id: 'q2', requested_amount: 800, currency: 'EUR' }),
    ]);
    expect(results.map((r) => r.resultCode)).toEqual(['SUCCESS', 'SUCCESS']);
    await pos.drain();
    expect(relayTransactions(terminalId).map((t) => t.state)).toEqual(['CONFIRMED', 'CONFIRMED']);
    await pos.close();
  });

  it('rejects with TERMINAL_BUSY while another POS keeps the terminal, and starts nothing', async () => {
    const { pos, terminalId } = await newPos({ busyWaitMs: 150 });
    await api('/transaction/purchase', {
      terminal_id: terminalId,
      external_id: 'other-pos',
      requested_amount: 100020, // 30 s
      currency: 'EUR',
      wait_seconds: 0,
    });
    const error = await pos
      .pay({ external_id: 'mine', requested_amount: 900, currency: 'EUR' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TpsError);
    expect(error).toMatchObject({ code: 'TERMINAL_BUSY', status: 400, externalId: 'mine' });
    expect(await pos.settled('mine')).toMatchObject({ status: 'refused' });
    expect(relayTransactions(terminalId).map((t) => t.external_id)).toEqual(['other-pos']);
    await api('/transaction/confirm', {
      terminal_id: terminalId,
      external_id: 'other-pos',
      result_code: 'ABORTED',
    });
    await pos.close();
  });

  it('on TOO_MANY_UNCONFIRMED waits for its own confirms to drain, then pays', async () => {
    const proxy = await FaultyProxy.start(relay.baseUrl);
    const { pos, terminalId } = await newPos({}, proxy.baseUrl);
    // The relay allows 2 unconfirmed; both confirms are lost a few times on the way.
    proxy.plan({ match: '/transaction/confirm', fault: 'drop-request', times: 6 });
    const first = await pos.pay({ requested_amount: INSTANT, currency: 'EUR' });
    const second = await pos.pay({ requested_amount: INSTANT, currency: 'EUR' });
    const third = await pos.pay({ requested_amount: INSTANT, currency: 'EUR' });
    expect(third.success).toBe(true);
    const refused = proxy.exchanges.filter((e) =>
      e.response?.body.includes('TOO_MANY_UNCONFIRMED'),
    );
    expect(refused.length).toBeGreaterThan(0);
    for (const r of [first, second, third])
      expect(await r.settled).toMatchObject({ status: 'settled' });
    expect(relayTransactions(terminalId).map((t) => t.state)).toEqual([
      'CONFIRMED',
      'CONFIRMED',
      'CONFIRMED',
    ]);
    await pos.close();
    await proxy.close();
  });

  it('says plainly when unconfirmed transactions that are not its own block the terminal', async () => {
    const { pos, terminalId } = await newPos();
    for (const id of ['lost-1', 'lost-2']) {
      await api('/transaction/purchase', {
        terminal_id: terminalId,
        external_id: id,
        requested_amount: INSTANT,
        currency: 'EUR',
      });
    }
    await expect(pos.pay({ requested_amount: 900, currency: 'EUR' })).rejects.toMatchObject({
      code: 'TOO_MANY_UNCONFIRMED',
      description: expect.stringMatching(/unconfirmed/),
    });
    // Taking them over (identifiers lost with an old journal) clears the way.
    const adopted = await pos.adoptUnconfirmed();
    expect(adopted.map((s) => s.status)).toEqual(['settled', 'settled']);
    expect((await pos.pay({ requested_amount: 900, currency: 'EUR' })).success).toBe(true);
    await pos.close();
  });
});

describe('a result the service no longer holds', () => {
  it('records a confirm answered INVALID_STATE as a conflict with the service transaction, and stops', async () => {
    const proxy = await FaultyProxy.start(relay.baseUrl);
    const journal = new MemoryJournal();
    const { pos, terminalId } = await newPos({ journal }, proxy.baseUrl);
    proxy.plan({ match: '/transaction/confirm', fault: 'stall-request' });
    const result = await pos.pay({ external_id: 'c', requested_amount: INSTANT, currency: 'EUR' });
    expect(result.success).toBe(true);
    const held = await proxy.waitFor('/transaction/confirm');
    // Meanwhile someone confirms it as failed by hand.
    await api('/transaction/confirm', {
      terminal_id: terminalId,
      external_id: 'c',
      result_code: 'ABORTED',
    });
    held.release();
    const settled = await result.settled;
    expect(settled.status).toBe('conflict');
    if (settled.status !== 'conflict') return;
    expect(settled.error).toMatchObject({ code: 'INVALID_STATE', status: 400 });
    expect(settled.transaction).toMatchObject({ state: 'COMMITTED', result_code: 'ABORTED' });
    expect((await journal.get(terminalId, 'c'))?.phase).toBe('CONFLICT');
    expect(proxy.operations().filter((op) => op === '/transaction/confirm')).toHaveLength(1);
    await pos.close();
    await proxy.close();
  });
});

describe('recovery on the same journal', () => {
  it('a new client confirms the results an old one recorded', async () => {
    const proxy = await FaultyProxy.start(relay.baseUrl);
    const file = tempJournal();
    const { pos, terminalId } = await newPos({ journal: file }, proxy.baseUrl);
    proxy.plan({ match: '/transaction/confirm', fault: 'drop-request', times: 1000 });
    const result = await pos.pay({ external_id: 'r1', requested_amount: INSTANT, currency: 'EUR' });
    await pos.close();
    expect(await result.settled).toMatchObject({ status: 'pending' });

    const after = new PosClient({
      baseUrl: direct.baseUrl,
      ...relay.account,
      terminalId,
      journal: file,
    });
    const recovered = await after.recover();
    expect(recovered).toMatchObject([{ externalId: 'r1', status: 'settled', success: true }]);
    expect(relayTransactions(terminalId)).toEqual([{ external_id: 'r1', state: 'CONFIRMED' }]);
    await after.close();
    await proxy.close();
  });

  it('a new client repeats a create whose outcome was never learned, then confirms it', async () => {
    const proxy = await FaultyProxy.start(relay.baseUrl);
    const file = tempJournal();
    const { pos, terminalId } = await newPos({ journal: file }, proxy.baseUrl);
    proxy.plan({ match: '/transaction/purchase', fault: 'stall-request' });
    const paying = pos.pay({ external_id: 'r2', requested_amount: 1200, currency: 'EUR' });
    const held = await proxy.waitFor('/transaction/purchase');
    await pos.close();
    await expect(paying).rejects.toMatchObject({ code: 'CLIENT_CLOSED', externalId: 'r2' });
    held.release(); // the lost create arrives late: the same transaction either way

    const after = new PosClient({
      baseUrl: direct.baseUrl,
      ...relay.account,
      terminalId,
      journal: file,
    });
    expect(await after.recover()).toMatchObject([
      { externalId: 'r2', status: 'settled', success: true },
    ]);
    expect(relayTransactions(terminalId)).toEqual([{ external_id: 'r2', state: 'CONFIRMED' }]);
    await after.close();
    await proxy.close();
  });
});
