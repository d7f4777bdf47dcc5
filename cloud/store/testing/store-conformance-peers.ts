/**
 * Store conformance across processes: two handles on the same data, as two relays have
 * it, calling at once; what must hold between relays (one transaction per pair, one active
 * per terminal, the unconfirmed limit, refunds within their purchase, the event log's
 * order, one value per claimed setting, one local TLS authority per account) holds
 * through both.
 */
import { expect, it } from 'vitest';
import { X509Certificate, generateKeyPairSync } from 'node:crypto';
import { ApiError } from '../../errors.js';
import { LocalAuthority } from '../../local-tls/authority.js';
import {
  decideCreate,
  type DecisionEnv,
} from '../../../protocol/transaction-rules/state-machine.js';
import type { Store } from '../store.js';
import {
  NOW,
  terminalRecord,
  transactionRecord,
  withTerminal,
  type StoreFactory,
} from './store-fixtures.js';

export function peerCases(factory: StoreFactory, peer: NonNullable<StoreFactory['peer']>): void {
  const env = (id: string): DecisionEnv => ({
    now: new Date(NOW),
    newTransactionId: () => `txn-${id}`,
    newCommandId: () => `cmd-${id}`,
    settings: {
      maxUnconfirmed: 100,
      startTtlMs: 60_000,
      pauseTimeoutMs: 60_000,
      gracePeriodMs: 60_000,
    },
  });
  const purchase = (terminalId: string, externalId: string, id: string) =>
    decideCreate(
      {
        kind: 'PURCHASE',
        request: {
          terminal_id: terminalId,
          external_id: externalId,
          requested_amount: 100,
          currency: 'EUR',
        },
      },
      'acct-1',
      env(id),
    );
  /** Runs each call through one handle or the other, in turn, all at once. */
  const spread = <T>(on: Store[], n: number, call: (store: Store, i: number) => Promise<T>) =>
    Promise.allSettled(Array.from({ length: n }, (_, i) => call(on[i % on.length]!, i)));
  /** Two handles on one store, each with its connections open, so that calls overlap. */
  const twoHandles = async (): Promise<[Store, Store]> => {
    const store = await withTerminal(factory);
    const other = await peer(store);
    await Promise.all(
      [store, other].flatMap((handle) =>
        Array.from({ length: 60 }, () => handle.getTerminal('t-1')),
      ),
    );
    return [store, other];
  };
  const codes = (outcomes: PromiseSettledResult<unknown>[]) =>
    outcomes.map((o) =>
      o.status === 'fulfilled'
        ? 'ok'
        : o.reason instanceof ApiError
          ? o.reason.code
          : String(o.reason),
    );

  it('creates of one pair through both handles at once make exactly one transaction', async () => {
    const [store, other] = await twoHandles();
    const outcomes = await spread([store, other], 50, (handle, i) =>
      handle.changeTransaction(
        { terminalId: 't-1', externalId: 'dup', forCreate: true },
        purchase('t-1', 'dup', String(i)),
      ),
    );
    expect(new Set(codes(outcomes))).toEqual(new Set(['ok']));
    const ids = outcomes.map((o) => (o.status === 'fulfilled' ? o.value.txn.id : ''));
    expect(new Set(ids).size).toBe(1);
    expect(await other.listUnconfirmed('t-1')).toHaveLength(1);
    expect(await store.pendingCommands()).toHaveLength(1);
    await Promise.all([store.close(), other.close()]);
  });

  it('creates of different pairs on one terminal through both handles leave one active', async () => {
    const [store, other] = await twoHandles();
    const outcomes = await spread([store, other], 20, (handle, i) =>
      handle.changeTransaction(
        { terminalId: 't-1', externalId: `order-${i}`, forCreate: true },
        purchase('t-1', `order-${i}`, String(i)),
      ),
    );
    const seen = codes(outcomes);
    expect(seen.filter((c) => c === 'ok')).toHaveLength(1);
    expect(seen.filter((c) => c === 'TERMINAL_BUSY')).toHaveLength(19);
    expect(await store.listUnconfirmed('t-1')).toHaveLength(1);
    await Promise.all([store.close(), other.close()]);
  });

  it('the unconfirmed limit holds through both handles', async () => {
    const [store, other] = await twoHandles();
    const outcomes = await spread([store, other], 20, (handle, i) =>
      handle.changeTransaction(
        { terminalId: 't-1', externalId: `order-${i}`, forCreate: true },
        (ctx) => {
          if (ctx.unconfirmedCount >= 3) throw new Error('too many unconfirmed');
          const record = transactionRecord('t-1', `order-${i}`, `txn-${i}`);
          return {
            write: { ...record, txn: { ...record.txn, state: 'AWAITING_CONFIRM' } },
            result: null,
          };
        },
      ),
    );
    expect(codes(outcomes).filter((c) => c === 'ok')).toHaveLength(3);
    expect(await other.listUnconfirmed('t-1')).toHaveLength(3);
    await Promise.all([store.close(), other.close()]);
  });

  it('refunds of one purchase through other terminals and both handles reserve its amount once', async () => {
    const [store, other] = await twoHandles();
    const terminals = Array.from({ length: 10 }, (_, i) => `t-r${i}`);
    for (const id of terminals) await store.createTerminal(terminalRecord(id));
    const paid = transactionRecord('t-1', 'paid', 'txn-paid');
    await store.changeTransaction({ terminalId: 't-1', externalId: 'paid' }, () => ({
      write: {
        ...paid,
        txn: { ...paid.txn, state: 'CONFIRMED', result_code: 'SUCCESS', total_amount: 100 },
      },
      result: null,
    }));
    const outcomes = await spread([store, other], terminals.length, (handle, i) => {
      const terminalId = terminals[i]!;
      const request = {
        terminal_id: terminalId,
        external_id: 'refund',
        requested_amount: 60,
        currency: 'EUR',
        original_purchase_external_id: 'paid',
        original_purchase_terminal_id: 't-1',
      };
      return handle.changeTransaction(
        {
          terminalId,
          externalId: 'refund',
          forCreate: true,
          original: { terminalId: 't-1', externalId: 'paid' },
        },
        decideCreate({ kind: 'REFUND', request }, 'acct-1', env(`refund-${i}`)),
      );
    });
    const seen = codes(outcomes);
    expect(seen.filter((c) => c === 'ok')).toHaveLength(1);
    expect(seen.filter((c) => c === 'REFUND_EXCEEDS_REFUNDABLE')).toHaveLength(9);
    expect(await other.listRefunds('txn-paid')).toHaveLength(1);
    await Promise.all([store.close(), other.close()]);
  });

  it('a reader reading on from its last position meets every event once, none behind it', async () => {
    const [store, other] = await twoHandles();
    const terminals = Array.from({ length: 8 }, (_, i) => `t-w${i}`);
    for (const id of terminals) await store.createTerminal(terminalRecord(id));
    const handles = [store, other];
    const perTerminal = 15;
    let writing = true;
    const writers = Promise.all(
      terminals.map(async (terminalId, w) => {
        for (let n = 0; n < perTerminal; n++) {
          const id = `${terminalId}-${n}`;
          const handle = handles[(w + n) % 2]!;
          if (n % 5 === 4) {
            await handle.updateTerminalStatus(terminalId, { screen_message: id }, NOW, `ev-${id}`);
            continue;
          }
          await handle.changeTransaction({ terminalId, externalId: id }, () => {
            const write = transactionRecord(terminalId, id, `txn-${id}`);
            const event = {
              accountId: 'acct-1',
              subject: terminalId,
              kind: 'Transaction' as const,
              time: NOW,
              data: write.txn,
            };
            return {
              write,
              events: [
                { ...event, id: `ev-${id}-a` },
                { ...event, id: `ev-${id}-b` },
              ],
              result: null,
            };
          });
        }
      }),
    ).finally(() => (writing = false));
    const read: Array<{ id: string; position: number }> = [];
    let last = 0;
    for (let turn = 0; ; turn++) {
      const done = !writing;
      const batch = await handles[turn % 2]!.readEvents({
        accountId: 'acct-1',
        after: last,
        limit: 7,
      });
      for (const event of batch) {
        expect(event.position).toBeGreaterThan(last);
        last = event.position;
        read.push({ id: event.id, position: event.position });
      }
      if (done && batch.length === 0) break;
      // Let the writers go on between reads (an embedded store writes in this thread).
      if (batch.length === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    await writers;
    const expected = terminals.length * perTerminal * 2 - terminals.length * 3;
    const all = await other.readEvents({ accountId: 'acct-1', after: 0, limit: 1000 });
    expect(all).toHaveLength(expected);
    // What was read on the way is the log: nothing appeared behind the reader.
    expect(read).toEqual(all.map((e) => ({ id: e.id, position: e.position })));
    expect((await store.eventBounds()).latest).toBe(all.at(-1)!.position);
    await Promise.all([store.close(), other.close()]);
  });

  it('a setting claimed through both handles at once keeps one value', async () => {
    const [store, other] = await twoHandles();
    const outcomes = await spread([store, other], 10, (handle, i) =>
      handle.claimSetting('instance', `value-${i}`),
    );
    const values = outcomes.map((o) => (o.status === 'fulfilled' ? o.value : 'failed'));
    expect(new Set(values).size).toBe(1);
    expect(await other.getSetting('instance')).toBe(values[0]);
    await Promise.all([store.close(), other.close()]);
  });

  it("an account's local TLS authority made through both handles at once is one, key and all", async () => {
    const [store, other] = await twoHandles();
    const clock = { now: () => new Date(NOW) };
    const made = await Promise.all(
      [store, other, store, other].map((handle) => LocalAuthority.of(handle, 'acct-1', clock)),
    );
    expect(new Set(made.map((authority) => authority.certificate)).size).toBe(1);
    // Read back through the other handle, it signs with the key its certificate names.
    const again = await LocalAuthority.of(other, 'acct-1', clock);
    const leaf = await again.sign({
      terminalId: 't-1',
      publicKey: generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).publicKey.export({
        type: 'spki',
        format: 'der',
      }),
      keyType: 'ec',
      ipAddresses: ['192.168.1.20'],
      dnsNames: ['t-1.tps.internal'],
      notAfter: new Date(Date.parse(NOW) + 86_400_000),
    });
    const authority = new X509Certificate(made[0]!.certificate);
    expect(new X509Certificate(leaf).verify(authority.publicKey)).toBe(true);
    // Another account's is another.
    const elsewhere = await LocalAuthority.of(store, 'acct-2', clock);
    expect(elsewhere.certificate).not.toBe(made[0]!.certificate);
    expect(
      new X509Certificate(leaf).verify(new X509Certificate(elsewhere.certificate).publicKey),
    ).toBe(false);
    await Promise.all([store.close(), other.close()]);
  });
}
