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
        { terminalId: 't-1', externalId: 'next', original: { terminalId: 't-1', externalId: 'p' } },
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
      expect((await store.listDue()).map((r) => r.txn.id)).toEqual(['txn-d']);
      const { dueAt: _cleared, ...rest } = due;
      await store.changeTransaction({ terminalId: 't-1', externalId: 'd' }, () => ({
        write: { ...rest, version: 2 },
        result: null,
      }));
      expect(await store.listDue()).toEqual([]);
      await store.close();
    });

    it('merges terminal readings and reports only real changes', async () => {
      const store = await withTerminal(factory);
      const later = '2026-11-21T12:00:05.000Z';
      const changed = await store.updateTerminalStatus('t-1', { battery_percentage: 42 }, later);
      expect(changed).toMatchObject({
        terminal_id: 't-1',
        battery_percentage: 42,
        transaction_state: 'READY',
        updated_at: later,
      });
      expect(await store.updateTerminalStatus('t-1', { battery_percentage: 42 }, later)).toBe(
        undefined,
      );
      expect((await store.getTerminal('t-1'))?.status.battery_percentage).toBe(42);
      expect(await store.updateTerminalStatus('t-404', { connected: true }, later)).toBe(undefined);
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
