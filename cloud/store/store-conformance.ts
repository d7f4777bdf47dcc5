/**
 * The behaviour every Store must show, as one suite that each implementation's test
 * file runs with its own factory: SQLite here, PostgreSQL alike.
 */
import { describe, expect, it } from 'vitest';
import type { TerminalCommand } from '../../protocol/index.js';
import type { TerminalRecord, TransactionRecord } from './records.js';
import type { Store } from './store.js';

export interface StoreFactory {
  /** A fresh, empty store. */
  open(): Promise<Store>;
  /** The same store again after close (a restart), when the implementation persists. */
  reopen?(store: Store): Promise<Store>;
}

const NOW = '2026-11-21T12:00:00.000Z';

export function terminalRecord(id: string, accountId = 'acct-1'): TerminalRecord {
  return {
    id,
    accountId,
    kind: 'SIMULATOR',
    capabilities: { printer: true, battery: true },
    status: { terminal_id: id, updated_at: NOW, transaction_state: 'READY' },
    createdAt: NOW,
  };
}

function transaction(terminalId: string, externalId: string, id: string): TransactionRecord {
  return {
    txn: {
      id,
      terminal_id: terminalId,
      external_id: externalId,
      type: 'PURCHASE',
      state: 'PROCESSING',
      created_at: NOW,
      updated_at: NOW,
      requested_amount: 100,
      currency: 'EUR',
    },
    accountId: 'acct-1',
    version: 1,
  };
}

const start = (commandId: string, transactionId: string): TerminalCommand => ({
  type: 'transaction.start',
  command_id: commandId,
  transaction_id: transactionId,
  external_id: 'x',
  kind: 'PURCHASE',
  requested_amount: 100,
  currency: 'EUR',
  pause_on_customer_identified: false,
});

async function withTerminal(factory: StoreFactory, id = 't-1') {
  const store = await factory.open();
  await store.ensureAccount('acct-1', NOW);
  await store.createTerminal(terminalRecord(id));
  return store;
}

export function storeConformance(name: string, factory: StoreFactory): void {
  describe(`${name} store conformance`, () => {
    it('a change writes the transaction and its commands together', async () => {
      const store = await withTerminal(factory);
      const record = transaction('t-1', 'order-1', 'txn-1');
      const result = await store.changeTransaction(
        { terminalId: 't-1', externalId: 'order-1' },
        (ctx) => {
          expect(ctx.current).toBeUndefined();
          expect(ctx.terminal?.id).toBe('t-1');
          return { write: record, commands: [start('cmd-1', 'txn-1')], result: 'done' };
        },
      );
      expect(result).toBe('done');
      expect(await store.getTransaction('t-1', 'order-1')).toEqual(record);
      expect(await store.getTransactionById('txn-1')).toEqual(record);
      expect(await store.pendingCommands()).toEqual([
        { terminalId: 't-1', command: start('cmd-1', 'txn-1') },
      ]);
      await store.ackCommand('cmd-1', NOW);
      expect(await store.pendingCommands()).toEqual([]);
      await store.close();
    });

    it('a decision that throws writes nothing, and does not undo its neighbours', async () => {
      const store = await withTerminal(factory);
      const refused = store.changeTransaction({ terminalId: 't-1', externalId: 'a' }, () => {
        throw new Error('refused');
      });
      const accepted = store.changeTransaction({ terminalId: 't-1', externalId: 'b' }, () => ({
        write: transaction('t-1', 'b', 'txn-b'),
        commands: [start('cmd-b', 'txn-b')],
        result: true,
      }));
      await expect(refused).rejects.toThrow('refused');
      await expect(accepted).resolves.toBe(true);
      expect(await store.getTransaction('t-1', 'a')).toBeUndefined();
      expect(await store.getTransaction('t-1', 'b')).toBeDefined();
      expect((await store.pendingCommands()).map((p) => p.command.command_id)).toEqual(['cmd-b']);
      await store.close();
    });

    it('concurrent creates of one pair see each other: exactly one is written', async () => {
      const store = await withTerminal(factory);
      const attempts = Array.from({ length: 50 }, (_, i) =>
        store.changeTransaction({ terminalId: 't-1', externalId: 'dup' }, (ctx) =>
          ctx.current
            ? { result: ctx.current.txn.id }
            : { write: transaction('t-1', 'dup', `txn-${i}`), result: `txn-${i}` },
        ),
      );
      const ids = new Set(await Promise.all(attempts));
      expect(ids.size).toBe(1);
      expect(await store.listUnconfirmed('t-1')).toHaveLength(1);
      await store.close();
    });

    it('the context shows the active transaction, the unconfirmed count and refunds', async () => {
      const store = await withTerminal(factory);
      await store.changeTransaction({ terminalId: 't-1', externalId: 'p' }, () => ({
        write: {
          ...transaction('t-1', 'p', 'txn-p'),
          txn: { ...transaction('t-1', 'p', 'txn-p').txn, state: 'CONFIRMED' },
        },
        result: null,
      }));
      await store.changeTransaction({ terminalId: 't-1', externalId: 'r' }, () => ({
        write: { ...transaction('t-1', 'r', 'txn-r'), originalId: 'txn-p' },
        result: null,
      }));
      const seen = await store.changeTransaction(
        {
          terminalId: 't-1',
          externalId: 'next',
          forCreate: true,
          original: { terminalId: 't-1', externalId: 'p' },
        },
        (ctx) => ({ result: ctx }),
      );
      expect(seen.active?.txn.id).toBe('txn-r');
      expect(seen.unconfirmedCount).toBe(1);
      expect(seen.original?.record?.txn.id).toBe('txn-p');
      expect(seen.original?.refunds.map((r) => r.txn.id)).toEqual(['txn-r']);
      expect((await store.listRefunds('txn-p')).map((r) => r.txn.id)).toEqual(['txn-r']);
      await store.close();
    });

    it('lists what falls due, and forgets it once cleared', async () => {
      const store = await withTerminal(factory);
      const due = { ...transaction('t-1', 'd', 'txn-d'), dueAt: NOW };
      await store.changeTransaction({ terminalId: 't-1', externalId: 'd' }, () => ({
        write: due,
        result: null,
      }));
      expect((await store.listDue(NOW, 10)).map((r) => r.txn.id)).toEqual(['txn-d']);
      expect(await store.listDue('2026-11-21T11:59:59.999Z', 10)).toEqual([]);
      expect(await store.nextDueAt()).toBe(NOW);
      const { dueAt: _cleared, ...rest } = due;
      await store.changeTransaction({ terminalId: 't-1', externalId: 'd' }, () => ({
        write: { ...rest, version: 2 },
        result: null,
      }));
      expect(await store.listDue(NOW, 10)).toEqual([]);
      expect(await store.nextDueAt()).toBeUndefined();
      await store.close();
    });

    it('merges terminal readings, and writes a status event only for a real change', async () => {
      const store = await withTerminal(factory);
      const later = '2026-11-21T12:00:05.000Z';
      const event = await store.updateTerminalStatus(
        't-1',
        { battery_percentage: 42 },
        later,
        'e1',
      );
      expect(event).toMatchObject({
        id: 'e1',
        accountId: 'acct-1',
        subject: 't-1',
        kind: 'TerminalStatus',
        time: later,
        data: {
          terminal_id: 't-1',
          battery_percentage: 42,
          transaction_state: 'READY',
          updated_at: later,
        },
      });
      expect(
        await store.updateTerminalStatus('t-1', { battery_percentage: 42 }, later, 'e2'),
      ).toBeUndefined();
      expect((await store.getTerminal('t-1'))?.status.battery_percentage).toBe(42);
      expect(await store.updateTerminalStatus('t-404', { connected: true }, later, 'e3')).toBe(
        undefined,
      );
      const all = await store.readEvents({ accountId: 'acct-1', after: 0, limit: 10 });
      expect(all.map((e) => e.id)).toEqual(['e1']);
      await store.close();
    });

    it('appends events with a change, in order, and reads them by account, subject and kind', async () => {
      const store = await withTerminal(factory);
      await store.createTerminal(terminalRecord('t-2'));
      const change = (terminalId: string, externalId: string, id: string) =>
        store.changeTransaction({ terminalId, externalId }, () => {
          const write = transaction(terminalId, externalId, id);
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
      const all = await store.readEvents({ accountId: 'acct-1', after: 0, limit: 10 });
      expect(all.map((e) => e.id)).toEqual(['ev-txn-a', 'ev-txn-b', 'ev-txn-c']);
      const positions = all.map((e) => e.position);
      expect([...positions].sort((x, y) => x - y)).toEqual(positions);
      expect(new Set(positions).size).toBe(3);
      const t1 = await store.readEvents({
        accountId: 'acct-1',
        after: 0,
        subject: 't-1',
        limit: 10,
      });
      expect(t1.map((e) => e.id)).toEqual(['ev-txn-a', 'ev-txn-c']);
      const afterFirst = await store.readEvents({
        accountId: 'acct-1',
        after: positions[0]!,
        limit: 1,
      });
      expect(afterFirst.map((e) => e.id)).toEqual(['ev-txn-b']);
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

    it('keeps agent credentials', async () => {
      const store = await withTerminal(factory);
      expect(await store.findAgentCredential('t-1')).toBeUndefined();
      await store.putAgentCredential('t-1', 'scrypt$a', NOW);
      await store.putAgentCredential('t-1', 'scrypt$b', NOW);
      expect(await store.findAgentCredential('t-1')).toBe('scrypt$b');
      await store.close();
    });

    it('applies each report of a journal once and after the one before it, a new journal from nothing', async () => {
      const store = await withTerminal(factory);
      expect(await store.lastReport('t-1')).toEqual({ journal: undefined, seq: 0 });
      await store.recordReport('t-1', { journal: 'aaaa', seq: 7 });
      await store.recordReport('t-1', { journal: 'aaaa', seq: 8 });
      await expect(store.recordReport('t-1', { journal: 'aaaa', seq: 8 })).rejects.toMatchObject({
        reason: 'duplicate',
      });
      await expect(store.recordReport('t-1', { journal: 'aaaa', seq: 5 })).rejects.toMatchObject({
        reason: 'duplicate',
      });
      await expect(
        store.recordReport('t-1', { journal: 'aaaa', seq: 10, prev: 9 }),
      ).rejects.toMatchObject({
        reason: 'gap',
      });
      expect(await store.lastReport('t-1')).toEqual({ journal: 'aaaa', seq: 8 });
      // 9 was a status the agent replaced before sending it: 10 follows 8.
      await store.recordReport('t-1', { journal: 'aaaa', seq: 10, prev: 8 });
      expect(await store.lastReport('t-1')).toEqual({ journal: 'aaaa', seq: 10 });
      // A new journal (the agent reinstalled) starts over.
      await store.recordReport('t-1', { journal: 'bbbb', seq: 2 });
      expect(await store.lastReport('t-1')).toEqual({ journal: 'bbbb', seq: 2 });
      await store.close();
    });

    it('applies a report and the change it carries in one commit, or neither', async () => {
      const store = await withTerminal(factory);
      const report = { journal: 'jjjj', seq: 1 };
      await store.changeTransaction({ terminalId: 't-1', externalId: 'e-1', report }, () => ({
        write: transaction('t-1', 'e-1', 'tx-1'),
        result: undefined,
      }));
      let decided = false;
      await expect(
        store.changeTransaction({ terminalId: 't-1', externalId: 'e-2', report }, () => {
          decided = true;
          return { write: transaction('t-1', 'e-2', 'tx-2'), result: undefined };
        }),
      ).rejects.toMatchObject({ reason: 'duplicate' });
      expect(decided).toBe(false);
      expect(await store.getTransaction('t-1', 'e-2')).toBeUndefined();
      // A decision that throws takes the report back with it.
      await expect(
        store.changeTransaction(
          { terminalId: 't-1', externalId: 'e-3', report: { ...report, seq: 2 } },
          () => {
            throw new Error('refused');
          },
        ),
      ).rejects.toThrow('refused');
      expect(await store.lastReport('t-1')).toEqual(report);
      const event = await store.updateTerminalStatus(
        't-1',
        { battery_percentage: 40 },
        NOW,
        'ev-status',
        { ...report, seq: 2 },
      );
      expect(event?.kind).toBe('TerminalStatus');
      await expect(
        store.updateTerminalStatus('t-1', { battery_percentage: 41 }, NOW, 'ev-2', {
          ...report,
          seq: 2,
        }),
      ).rejects.toMatchObject({ reason: 'duplicate' });
      expect((await store.getTerminal('t-1'))?.status.battery_percentage).toBe(40);
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

    it('keeps credentials as given and settings by key', async () => {
      const store = await withTerminal(factory);
      const credential = {
        username: 'u1',
        secretHash: 'scrypt$x',
        accountId: 'acct-1',
        terminalId: 't-1',
        createdAt: NOW,
      };
      await store.putCredential(credential);
      expect(await store.findCredential('u1')).toEqual(credential);
      expect(await store.findCredential('nobody')).toBeUndefined();
      await store.putSetting('k', 'v1');
      await store.putSetting('k', 'v2');
      expect(await store.getSetting('k')).toBe('v2');
      await store.close();
    });

    if (factory.reopen) {
      const reopen = factory.reopen;
      it('keeps everything across a restart', async () => {
        const store = await withTerminal(factory);
        await store.changeTransaction({ terminalId: 't-1', externalId: 'kept' }, () => ({
          write: transaction('t-1', 'kept', 'txn-kept'),
          commands: [start('cmd-kept', 'txn-kept')],
          result: null,
        }));
        const again = await reopen(store);
        expect((await again.getTransaction('t-1', 'kept'))?.txn.id).toBe('txn-kept');
        expect((await again.pendingCommands()).map((p) => p.command.command_id)).toEqual([
          'cmd-kept',
        ]);
        expect((await again.listTerminals()).map((t) => t.id)).toEqual(['t-1']);
        await again.close();
      });
    }
  });
}
