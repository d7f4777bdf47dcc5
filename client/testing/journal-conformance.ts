/**
 * What every Journal must do, as one suite each implementation's test runs with its own
 * factory: the SQLite file and the in-memory journal here, a POS's own store alike.
 */
import { describe, expect, it } from 'vitest';
import type { Journal, JournalEntry } from '../journal.js';

export interface JournalFactory {
  /** A fresh, empty journal. */
  open(): Promise<Journal>;
  /** The same journal after close (a restart), when the implementation persists. */
  reopen?(journal: Journal): Promise<Journal>;
}

const AT = '2026-11-21T12:00:00.000Z';

export function entry(externalId: string, overrides: Partial<JournalEntry> = {}): JournalEntry {
  return {
    terminalId: 't-1',
    externalId,
    kind: 'PURCHASE',
    origin: 'pos',
    request: {
      terminal_id: 't-1',
      external_id: externalId,
      requested_amount: 1000,
      currency: 'EUR',
    },
    phase: 'STARTED',
    createdAt: AT,
    updatedAt: AT,
    ...overrides,
  };
}

export function journalConformance(name: string, factory: JournalFactory): void {
  describe(`${name} journal`, () => {
    it('keeps an entry as written, and refuses a second one for the same pair', async () => {
      const journal = await factory.open();
      await journal.insert(entry('a'));
      expect(await journal.get('t-1', 'a')).toEqual(entry('a'));
      await expect(journal.insert(entry('a'))).rejects.toMatchObject({ code: 'JOURNAL_CONFLICT' });
      expect(await journal.get('t-1', 'b')).toBeUndefined();
      expect(await journal.get('t-2', 'a')).toBeUndefined();
      await journal.close();
    });

    it('replaces an entry on update, and refuses to update one it does not hold', async () => {
      const journal = await factory.open();
      await journal.insert(entry('a'));
      const result = entry('a', {
        phase: 'RESULT',
        confirm: { resultCode: 'SUCCESS' },
        transaction: {
          id: 'txn-1',
          terminal_id: 't-1',
          external_id: 'a',
          type: 'PURCHASE',
          state: 'AWAITING_CONFIRM',
          created_at: AT,
          updated_at: AT,
          result_code: 'SUCCESS',
        },
        updatedAt: '2026-11-21T12:00:01.000Z',
      });
      await journal.update(result);
      expect(await journal.get('t-1', 'a')).toEqual(result);
      await expect(journal.update(entry('zz'))).rejects.toMatchObject({ code: 'UNKNOWN_PAYMENT' });
      await journal.close();
    });

    it('lists unsettled entries (STARTED, RESULT) oldest first, per terminal or all', async () => {
      const journal = await factory.open();
      await journal.insert(entry('1'));
      await journal.insert(entry('2', { phase: 'RESULT', confirm: { resultCode: 'ABORTED' } }));
      await journal.insert(entry('3', { terminalId: 't-2' }));
      await journal.insert(entry('4'));
      await journal.update(entry('4', { phase: 'SETTLED' }));
      await journal.insert(entry('5', { phase: 'REFUSED', error: { code: 'TERMINAL_BUSY' } }));
      expect((await journal.unsettled()).map((e) => e.externalId)).toEqual(['1', '2', '3']);
      expect((await journal.unsettled('t-1')).map((e) => e.externalId)).toEqual(['1', '2']);
      expect(await journal.unsettled('t-9')).toEqual([]);
      await journal.close();
    });

    it('hands out copies: changing a returned entry changes nothing stored', async () => {
      const journal = await factory.open();
      await journal.insert(entry('a'));
      const read = (await journal.get('t-1', 'a'))!;
      read.phase = 'SETTLED';
      expect((await journal.get('t-1', 'a'))?.phase).toBe('STARTED');
      await journal.close();
    });

    if (factory.reopen) {
      const reopen = factory.reopen;
      it('keeps everything across a restart', async () => {
        const journal = await factory.open();
        await journal.insert(entry('a'));
        await journal.insert(entry('b'));
        await journal.update(entry('b', { phase: 'RESULT', confirm: { resultCode: 'SUCCESS' } }));
        const again = await reopen(journal);
        expect(await again.get('t-1', 'a')).toEqual(entry('a'));
        expect((await again.unsettled()).map((e) => [e.externalId, e.phase])).toEqual([
          ['a', 'STARTED'],
          ['b', 'RESULT'],
        ]);
        await again.close();
      });
    }
  });
}
