/**
 * Conformance of EventStore (ports/events.ts): events appended with the writes that tell
 * them, read in order by account, subject and kind; retention that never reuses a
 * position; webhooks and their delivery state; and across processes, a reader reading on
 * from its last position meets every event once.
 */
import { describe, expect, it } from 'vitest';
import { peerFixtures } from './peer-fixtures.js';
import {
  NOW,
  terminalRecord,
  transactionRecord,
  withTerminal,
  type StoreFactory,
} from './store-fixtures.js';

export function eventsConformance(factory: StoreFactory): void {
  describe('events and webhooks (EventStore)', () => {
    it('appends events with a change, in order, and reads them by account, subject and kind', async () => {
      const store = await withTerminal(factory);
      await store.createTerminal(terminalRecord('t-2'));
      const change = (terminalId: string, externalId: string, id: string) =>
        store.changeTransaction({ terminalId, externalId }, () => {
          const write = transactionRecord(terminalId, externalId, id);
          return {
            write,
            events: [
              {
                id: `ev-${id}`,
                accountId: 'acct-1',
                subject: terminalId,
                kind: 'Transaction' as const,
                time: NOW,
                data: write.txn,
              },
            ],
            result: null,
          };
        });
      await Promise.all([
        change('t-1', 'a', 'txn-a'),
        change('t-2', 'b', 'txn-b'),
        change('t-1', 'c', 'txn-c'),
      ]);
      const refused = store.changeTransaction({ terminalId: 't-1', externalId: 'd' }, () => {
        throw new Error('no');
      });
      await expect(refused).rejects.toThrow();
      // Changes made at once commit in some order (a shared store runs them in parallel):
      // the log is in the order of its positions, whichever that is.
      const all = await store.readEvents({ accountId: 'acct-1', after: 0, limit: 10 });
      expect(all.map((e) => e.id).sort()).toEqual(['ev-txn-a', 'ev-txn-b', 'ev-txn-c']);
      const positions = all.map((e) => e.position);
      expect([...positions].sort((x, y) => x - y)).toEqual(positions);
      expect(new Set(positions).size).toBe(3);
      const t1 = await store.readEvents({
        accountId: 'acct-1',
        after: 0,
        subject: 't-1',
        limit: 10,
      });
      expect(t1.map((e) => e.id)).toEqual(all.filter((e) => e.subject === 't-1').map((e) => e.id));
      expect(t1.map((e) => e.id).sort()).toEqual(['ev-txn-a', 'ev-txn-c']);
      const afterFirst = await store.readEvents({
        accountId: 'acct-1',
        after: positions[0]!,
        limit: 1,
      });
      expect(afterFirst.map((e) => e.id)).toEqual([all[1]!.id]);
      expect(
        await store.readEvents({
          accountId: 'acct-1',
          after: 0,
          kind: 'TerminalStatus',
          limit: 10,
        }),
      ).toEqual([]);
      expect(
        await store.readEvents({ accountId: 'acct-1', after: 0, kind: null, limit: 10 }),
      ).toEqual([]);
      expect(await store.readEvents({ accountId: 'acct-2', after: 0, limit: 10 })).toEqual([]);
      expect(await store.countEvents({ accountId: 'acct-1', after: 0, subject: 't-1' })).toBe(2);
      expect((await store.eventBounds()).latest).toBe(positions[2]);
      await store.close();
    });

    it('trims old events below what is still needed, and never reuses a position', async () => {
      const store = await withTerminal(factory);
      const old = '2026-11-01T00:00:00.000Z';
      for (const id of ['e1', 'e2', 'e3']) {
        await store.updateTerminalStatus('t-1', { screen_message: id }, old, id);
      }
      const [e1, e2, e3] = await store.readEvents({ accountId: 'acct-1', after: 0, limit: 10 });
      // e3 is still needed (a receiver has not had it): only e1 and e2 go.
      expect(await store.trimEvents(NOW, e3!.position)).toBe(e2!.position);
      expect(
        (await store.readEvents({ accountId: 'acct-1', after: 0, limit: 10 })).map((e) => e.id),
      ).toEqual(['e3']);
      expect(await store.eventBounds()).toEqual({
        latest: e3!.position,
        trimmedThrough: e2!.position,
      });
      expect(await store.trimEvents(NOW, Number.MAX_SAFE_INTEGER)).toBe(e3!.position);
      const next = await store.updateTerminalStatus('t-1', { screen_message: 'e4' }, NOW, 'e4');
      expect(next!.position).toBeGreaterThan(e3!.position);
      expect(e1!.position).toBeLessThan(e2!.position);
      await store.close();
    });

    it('keeps webhooks and their delivery state', async () => {
      const store = await withTerminal(factory);
      const hook = {
        id: 'wh-1',
        accountId: 'acct-1',
        url: 'https://example.test/hook',
        filter: { subject: { eq: 't-1' } },
        mode: 'structured' as const,
        secret: 'whsec_x',
        enabled: true,
        cursor: 0,
        createdAt: NOW,
      };
      await store.createWebhook(hook);
      await store.updateWebhook('wh-1', { cursor: 5, failingSince: NOW, lastError: 'HTTP 500' });
      expect(await store.getWebhook('wh-1')).toEqual({
        ...hook,
        cursor: 5,
        failingSince: NOW,
        lastError: 'HTTP 500',
      });
      await store.updateWebhook('wh-1', { failingSince: undefined, lastError: undefined });
      expect(await store.getWebhook('wh-1')).toEqual({ ...hook, cursor: 5 });
      expect((await store.listWebhooks('acct-1')).map((h) => h.id)).toEqual(['wh-1']);
      expect(await store.listWebhooks('acct-2')).toEqual([]);
      await store.deleteWebhook('wh-1');
      expect(await store.getWebhook('wh-1')).toBeUndefined();
      await store.close();
    });
    if (factory.peer) {
      const { twoHandles } = peerFixtures(factory, factory.peer);
      describe('across processes (a second handle on the same data)', () => {
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
                  await handle.updateTerminalStatus(
                    terminalId,
                    { screen_message: id },
                    NOW,
                    `ev-${id}`,
                  );
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
      });
    }
  });
}
