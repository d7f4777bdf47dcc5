/**
 * Conformance of TransactionStore (ports/transactions.ts): a change's decision and its
 * writes in one commit, concurrent ones in turn; what a decision sees; deadlines; a
 * report and the change it carries together; the search's order; all of it across a
 * restart; and across processes, one transaction per pair, one active per terminal, the
 * unconfirmed limit, refunds within their purchase.
 */
import { describe, expect, it } from 'vitest';
import { decideCreate } from '../../../protocol/transaction-rules/state-machine.js';
import { peerFixtures } from './peer-fixtures.js';
import {
  NOW,
  start,
  terminalRecord,
  transactionRecord,
  withTerminal,
  type StoreFactory,
} from './store-fixtures.js';

export function transactionsConformance(factory: StoreFactory): void {
  describe('transactions and commands (TransactionStore)', () => {
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

    it('searches newest first by creation then id, time-ordered and pair-named ids alike', async () => {
      const store = await withTerminal(factory);
      // A pair-named id sorts anywhere among time-ordered ones; creation decides.
      const rows: Array<[string, string, string]> = [
        ['o-1', 'txn-01KAAAAAAAAAAAAAAAAAAAAAAA', '2026-11-21T12:00:01.000Z'],
        ['o-2', 'txn-ZZZZZZZZZZZZZZZZZZZZZZZZZZ', '2026-11-21T12:00:02.000Z'],
        ['o-3', 'txn-01KBBBBBBBBBBBBBBBBBBBBBBB', '2026-11-21T12:00:03.000Z'],
        ['o-4', 'txn-0000000000000000000000000A', '2026-11-21T12:00:04.000Z'],
        ['o-5', 'txn-0000000000000000000000000B', '2026-11-21T12:00:04.000Z'],
      ];
      for (const [externalId, id, createdAt] of rows) {
        const record = transactionRecord('t-1', externalId, id);
        record.txn.created_at = createdAt;
        await store.changeTransaction({ terminalId: 't-1', externalId }, () => ({
          write: record,
          result: undefined,
        }));
      }
      const page = (beforeId?: string) =>
        store.searchTransactions({
          accountId: 'acct-1',
          limit: 2,
          ...(beforeId ? { beforeId } : {}),
        });
      const seen: string[] = [];
      let cursor: string | undefined;
      for (let i = 0; i < 4; i++) {
        const rows = await page(cursor);
        seen.push(...rows.map((r) => r.txn.external_id));
        if (rows.length < 2) break;
        cursor = rows.at(-1)!.txn.id;
      }
      expect(seen).toEqual(['o-5', 'o-4', 'o-3', 'o-2', 'o-1']);
      // A record replaced with another creation time (a mirror taking the agent's) moves.
      const moved = transactionRecord('t-1', 'o-1', rows[0]![1]);
      moved.txn.created_at = '2026-11-21T12:00:09.000Z';
      await store.changeTransaction({ terminalId: 't-1', externalId: 'o-1' }, () => ({
        write: { ...moved, version: 2 },
        result: undefined,
      }));
      expect((await page()).map((r) => r.txn.external_id)).toEqual(['o-1', 'o-5']);
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
      const { env, purchase, spread, twoHandles, codes } = peerFixtures(factory, factory.peer);
      describe('across processes (a second handle on the same data)', () => {
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
      });
    }
  });
}
