/**
 * Conformance of TerminalStore (ports/terminals.ts): a terminal's status merged, with its
 * event only for a real change; its reader's capabilities beside the others; its name and
 * cohort; reports applied once and in order; an end-of-day told once with its report; the
 * status and last report read together.
 */
import { describe, expect, it } from 'vitest';
import { NATIVE_READER_CAPABILITIES } from '../../../protocol/index.js';
import { NOW, terminalRecord, withTerminal, type StoreFactory } from './store-fixtures.js';

export function terminalsConformance(factory: StoreFactory): void {
  describe('terminals and their reports (TerminalStore)', () => {
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

    it("keeps what a terminal's card reader can do beside its other capabilities", async () => {
      const store = await withTerminal(factory);
      const zvt = { ...NATIVE_READER_CAPABILITIES, protocol: 'zvt' as const, cashback: false };
      await store.setReaderCapabilities('t-1', zvt);
      expect((await store.getTerminal('t-1'))?.capabilities).toEqual({
        printer: true,
        battery: true,
        reader: zvt,
      });
      await store.setReaderCapabilities('t-1', undefined);
      expect((await store.getTerminal('t-1'))?.capabilities).toEqual({
        printer: true,
        battery: true,
      });
      await store.setReaderCapabilities('t-404', zvt);
      expect(await store.getTerminal('t-404')).toBeUndefined();
      await store.close();
    });

    it('keeps a terminal’s name and cohort', async () => {
      const store = await withTerminal(factory);
      await store.createTerminal({ ...terminalRecord('t-2'), name: 'Till 2', cohort: 'cohort-n' });
      expect(await store.getTerminal('t-2')).toMatchObject({ name: 'Till 2', cohort: 'cohort-n' });
      const plain = await store.getTerminal('t-1');
      expect(plain).not.toHaveProperty('name');
      expect(plain).not.toHaveProperty('cohort');
      expect((await store.listTerminals()).find((t) => t.id === 't-2')?.cohort).toBe('cohort-n');
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
  });
}
