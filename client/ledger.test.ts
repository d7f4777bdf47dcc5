import { describe, expect, it } from 'vitest';
import { MemoryJournal, entryKey, type JournalEntry } from './journal.js';
import { entry } from './testing/journal-conformance.js';
import { Ledger } from './ledger.js';

/** A journal whose updates wait until the test lets them through. */
class SlowJournal extends MemoryJournal {
  readonly pending: Array<() => void> = [];
  override async update(e: JournalEntry): Promise<void> {
    await new Promise<void>((resolve) => this.pending.push(resolve));
    return super.update(e);
  }
}

describe('ledger', () => {
  it('decides each change on the latest entry at once, writes them in order, and wakes waiters only when durable', async () => {
    const journal = new SlowJournal();
    const ledger = new Ledger(journal, () => '2026-11-21T12:00:00.000Z');
    await ledger.insert(entry('a'));
    const key = entryKey('t-1', 'a');
    const settled = ledger.whenFinal(key);
    let woken = false;
    void settled.then(() => (woken = true));

    const first = ledger.mutate(key, (e) => ({
      ...e,
      phase: 'RESULT',
      confirm: { resultCode: 'SUCCESS' },
    }));
    const second = ledger.mutate(key, (e) => {
      expect(e.phase).toBe('RESULT'); // sees the first change before it is durable
      return { ...e, phase: 'SETTLED' };
    });
    expect(ledger.current(key)?.phase).toBe('SETTLED');
    await new Promise((resolve) => setImmediate(resolve));
    expect(journal.pending).toHaveLength(1); // one write at a time
    journal.pending.shift()!();
    await first;
    await new Promise((resolve) => setImmediate(resolve));
    expect((await journal.get('t-1', 'a'))?.phase).toBe('RESULT');
    expect(woken).toBe(false);
    journal.pending.shift()!();
    await second;
    expect((await settled)?.phase).toBe('SETTLED');
  });

  it('writes nothing for an unchanged entry, and nothing when the change throws', async () => {
    const journal = new MemoryJournal();
    const ledger = new Ledger(journal, () => 'now');
    await ledger.insert(entry('a'));
    const key = entryKey('t-1', 'a');
    expect(await ledger.mutate(key, (e) => e)).toEqual(entry('a'));
    await expect(
      ledger.mutate(key, () => {
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(await journal.get('t-1', 'a')).toEqual(entry('a'));
  });

  it('wakes waiters with nothing when released', async () => {
    const ledger = new Ledger(new MemoryJournal(), () => 'now');
    await ledger.insert(entry('a'));
    const waiting = ledger.whenFinal(entryKey('t-1', 'a'));
    ledger.release();
    expect(await waiting).toBeUndefined();
  });
});
