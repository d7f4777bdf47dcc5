/**
 * Store conformance: transaction changes (a decision and its writes, one commit each,
 * concurrent ones in turn), what a decision sees, deadlines, and reports applied once and
 * in order.
 */
import { expect, it } from 'vitest';
import {
  NOW,
  start,
  transactionRecord,
  withTerminal,
  type StoreFactory,
} from './store-fixtures.js';

export function changeCases(factory: StoreFactory): void {
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
    expect([...results].sort((a, b) => a - b)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
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

  it('appends an end-of-day as one TerminalSettlement event with its report, once', async () => {
    const store = await withTerminal(factory);
    const settlement = {
      status: 'SUCCESS' as const,
      trigger: 'SCHEDULE' as const,
      attempt: 1,
      started_at: '2026-01-01T02:00:00.000Z',
      finished_at: '2026-01-01T02:00:04.000Z',
      total_amount: 12_345,
      currency: 'EUR',
    };
    const report = { journal: 'eeee', seq: 1 };
    const event = await store.appendSettlement('t-1', settlement, 'ev-eod', report);
    expect(event).toMatchObject({ kind: 'TerminalSettlement', subject: 't-1' });
    expect(await store.lastReport('t-1')).toEqual(report);
    // The same report again (the agent sent it before the acknowledgement came): nothing new.
    await expect(
      store.appendSettlement('t-1', settlement, 'ev-eod-again', report),
    ).rejects.toMatchObject({ reason: 'duplicate' });
    const events = await store.readEvents({ accountId: 'acct-1', after: 0, limit: 10 });
    const settlements = events.filter((e) => e.kind === 'TerminalSettlement');
    expect(settlements.map((e) => e.id)).toEqual(['ev-eod']);
    expect(settlements[0]?.data).toMatchObject({ total_amount: 12_345, trigger: 'SCHEDULE' });
    // An unknown terminal: no event, the report still recorded.
    expect(await store.appendSettlement('t-404', settlement, 'ev-none')).toBeUndefined();
    await store.close();
  });

  it('reads a terminal status and its last report together, as the heartbeat check does', async () => {
    const store = await withTerminal(factory);
    expect(await store.statusAndLastReport('t-404')).toBeUndefined();
    const before = await store.statusAndLastReport('t-1');
    expect(before).toEqual({
      status: (await store.getTerminal('t-1'))?.status,
      lastReport: { journal: undefined, seq: 0 },
    });
    await store.updateTerminalStatus('t-1', { battery_percentage: 12 }, NOW, 'ev-low', {
      journal: 'kkkk',
      seq: 3,
    });
    expect(await store.statusAndLastReport('t-1')).toEqual({
      status: { ...before?.status, battery_percentage: 12 },
      lastReport: { journal: 'kkkk', seq: 3 },
    });
    await store.close();
  });
}
