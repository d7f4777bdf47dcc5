/**
 * Network failures injected between PosClient and the relay by a TCP proxy, at each step
 * of a payment: the request lost before the relay sees it, held past the client's
 * time-out (and delivered late), the answer lost or held after the relay acted, the
 * connection cut while the relay long-polls. Every payment ends CONFIRMED or COMMITTED
 * exactly once, and the caller learns the true result.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryJournal, PosClient } from '../client/index.js';
import { FaultyProxy, type Fault } from './support/faulty-proxy.js';
import { post, startTestRelay, type TestRelay } from './support/relay.js';

let relay: TestRelay;
beforeAll(async () => {
  // Slow enough for a create to be parked in a long poll when the connection is cut.
  relay = await startTestRelay({ simulatorDelayMs: 300 });
});
afterAll(async () => {
  await relay.close();
});

function relayTransactions(terminalId: string): Array<{ external_id: string; state: string }> {
  const db = new Database(path.join(relay.dataDir, 'relay.sqlite'), { readonly: true });
  try {
    return db
      .prepare('SELECT external_id, state FROM transactions WHERE terminal_id = ?')
      .all(terminalId) as Array<{ external_id: string; state: string }>;
  } finally {
    db.close();
  }
}

const FAULTS: Fault[] = [
  'drop-request',
  'stall-request',
  'drop-response',
  'stall-response',
  'cut-in-flight',
];
const STEPS = ['/transaction/purchase', '/transaction/confirm'] as const;
const cases = STEPS.flatMap((step) =>
  FAULTS.flatMap((fault) => [
    { step, fault, amount: 1000, result: 'SUCCESS', final: 'CONFIRMED' },
    { step, fault, amount: 100006, result: 'DECLINED_BY_ISSUER', final: 'COMMITTED' },
  ]),
);

describe.concurrent('a fault at each step', () => {
  it.each(cases)(
    '$fault on $step ($result): settled once, true result',
    async ({ step, fault, amount, result, final }) => {
      const sim = await relay.newSimulator();
      const proxy = await FaultyProxy.start(relay.baseUrl);
      // Twice in a row, so a repeat meets the fault again.
      proxy.plan({ match: step, fault, times: 2, afterMs: 100 });
      const pos = new PosClient({
        baseUrl: proxy.baseUrl,
        ...relay.account,
        terminalId: sim.terminal_id,
        journal: new MemoryJournal(),
        waitSeconds: 0.5,
        timeoutMs: 300,
        backoff: { initialMs: 10, maxMs: 50 },
      });
      const externalId = `${fault}-${step.split('/')[2]}-${amount}`;
      const paid = await pos.pay({
        external_id: externalId,
        requested_amount: amount,
        currency: 'EUR',
      });
      expect(paid.resultCode).toBe(result);
      const settled = await paid.settled;
      expect(settled).toMatchObject({ status: 'settled', resultCode: result, aborted: false });
      expect(settled.status === 'settled' && settled.transaction.state).toBe(final);

      // A held request that reaches the relay late changes nothing.
      for (const held of proxy.exchanges.filter((e) => e.fault === 'stall-request')) held.release();
      await Promise.all(
        proxy.exchanges
          .filter((e) => e.fault === 'stall-request')
          .map((e) => proxy.waitFor((r) => r.seq === e.request.seq, 'response')),
      );
      expect(proxy.exchanges.filter((e) => e.fault === fault)).toHaveLength(2);
      expect(relayTransactions(sim.terminal_id)).toEqual([
        { external_id: externalId, state: final },
      ]);
      const read = await post(
        relay.baseUrl,
        'v1',
        '/transaction/get',
        { terminal_id: sim.terminal_id, external_id: externalId },
        relay.account,
      );
      expect(read.body.transaction).toMatchObject({ state: final, result_code: result });
      await pos.close();
      await proxy.close();
    },
  );
});
