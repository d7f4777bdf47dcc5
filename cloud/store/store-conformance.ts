/**
 * The behaviour every Store must show, as one suite that each implementation's test
 * file runs with its own factory: SQLite here, PostgreSQL alike.
 */
import { describe, expect, it } from 'vitest';
import type { TerminalCommand } from '../../protocol/index.js';
import { ApiError } from '../errors.js';
import { decideCreate, type DecisionEnv } from '../transactions/state-machine.js';
import type { TerminalRecord, TransactionRecord } from './records.js';
import type { Store } from './store.js';

export interface StoreFactory {
  /** A fresh, empty store. */
  open(): Promise<Store>;
  /** The same store again after close (a restart), when the implementation persists. */
  reopen?(store: Store): Promise<Store>;
  /**
   * Another handle on the same data, as a second relay process has it (the same file, the
   * same schema): the guarantees that must hold across processes are tested through it.
   */
  peer?(store: Store): Promise<Store>;
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

export function transactionRecord(
  terminalId: string,
  externalId: string,
  id: string,
): TransactionRecord {
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
      const record = transactionRecord('t-1', 'order-1', 'txn-1');
      const result = await store.changeTransaction(
        { terminalId: 't-1', externalId: 'order-1' },
        (ctx) => {
          expect(ctx.current).toBeUndefined();
          expect(ctx.terminalOwner).toBe('acct-1');
          return { write: record, commands: [start('cmd-1', 'txn-1')], result: 'done' };
        },
      );
      expect(result).toBe('done');
      expect(await store.getTransaction('t-1', 'order-1')).toEqual(record);
      expect(await store.getTransactionById('txn-1')).toEqual(record);
      expect(await store.pendingCommands()).toEqual([
        { terminalId: 't-1', command: start('cmd-1', 'txn-1') },
      ]);
      // Another terminal's acknowledgement of it changes nothing.
      await store.ackCommand('t-2', 'cmd-1', NOW);
      expect(await store.pendingCommands()).toHaveLength(1);
      await store.ackCommand('t-1', 'cmd-1', NOW);
      expect(await store.pendingCommands()).toEqual([]);
      await store.close();
    });

    it('a decision that throws writes nothing, and does not undo its neighbours', async () => {
      const store = await withTerminal(factory);
      const refused = store.changeTransaction({ terminalId: 't-1', externalId: 'a' }, () => {
        throw new Error('refused');
      });
      const accepted = store.changeTransaction({ terminalId: 't-1', externalId: 'b' }, () => ({
        write: transactionRecord('t-1', 'b', 'txn-b'),
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

    it('changes of one transaction at once each decide on the one before', async () => {
      const store = await withTerminal(factory);
      const key = { terminalId: 't-1', externalId: 'n' };
      const results = await Promise.all(
        Array.from({ length: 60 }, () =>
          store.changeTransaction(key, (ctx) => {
            const version = (ctx.current?.version ?? 0) + 1;
            return {
              write: { ...transactionRecord('t-1', 'n', 'txn-n'), version },
              result: version,
            };
          }),
        ),
      );
      expect([...results].sort((a, b) => a - b)).toEqual(
        Array.from({ length: 60 }, (_, i) => i + 1),
      );
      expect((await store.getTransaction('t-1', 'n'))?.version).toBe(60);
      await store.close();
    });

    it('concurrent creates of one pair see each other: exactly one is written', async () => {
      const store = await withTerminal(factory);
      const attempts = Array.from({ length: 50 }, (_, i) =>
        store.changeTransaction({ terminalId: 't-1', externalId: 'dup' }, (ctx) =>
          ctx.current
            ? { result: ctx.current.txn.id }
            : { write: transactionRecord('t-1', 'dup', `txn-${i}`), result: `txn-${i}` },
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
          ...transactionRecord('t-1', 'p', 'txn-p'),
          txn: { ...transactionRecord('t-1', 'p', 'txn-p').txn, state: 'CONFIRMED' },
        },
        result: null,
      }));
      await store.changeTransaction({ terminalId: 't-1', externalId: 'r' }, () => ({
        write: { ...transactionRecord('t-1', 'r', 'txn-r'), originalId: 'txn-p' },
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
      const due = { ...transactionRecord('t-1', 'd', 'txn-d'), dueAt: NOW };
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
        write: transactionRecord('t-1', 'e-1', 'tx-1'),
        result: undefined,
      }));
      let decided = false;
      await expect(
        store.changeTransaction({ terminalId: 't-1', externalId: 'e-2', report }, () => {
          decided = true;
          return { write: transactionRecord('t-1', 'e-2', 'tx-2'), result: undefined };
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
          write: transactionRecord('t-1', 'kept', 'txn-kept'),
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

    if (factory.peer) {
      const peer = factory.peer;
      describe('across processes (a second handle on the same data)', () => {
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
      });
    }
  });
}
