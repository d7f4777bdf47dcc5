import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { MemoryJournal, type Journal } from './journal.js';
import { entry, journalConformance } from './testing/journal-conformance.js';
import { SqliteJournal } from './sqlite-journal.js';

const tempFile = () =>
  path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tps-journal-')), 'nested', 'pos.sqlite');
const files = new Map<Journal, string>();

journalConformance('SQLite', {
  async open() {
    const file = tempFile();
    const journal = new SqliteJournal(file);
    files.set(journal, file);
    return journal;
  },
  async reopen(journal) {
    await journal.close();
    return new SqliteJournal(files.get(journal)!);
  },
});

journalConformance('memory', { open: async () => new MemoryJournal() });

describe('SQLite journal specifics', () => {
  it('refuses a journal written by a newer release instead of running on it', async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tps-journal-')), 'pos.sqlite');
    const journal = new SqliteJournal(file);
    await journal.close();
    const db = new Database(file);
    db.pragma('user_version = 99');
    db.close();
    expect(() => new SqliteJournal(file)).toThrow(/schema version 99, newer than this release/);
  });

  it('runs in WAL mode with synchronous=FULL, holding the file exclusively', async () => {
    const journal = new SqliteJournal(tempFile());
    expect(journal.settings()).toEqual({
      journalMode: 'wal',
      synchronous: 2,
      lockingMode: 'exclusive',
    });
    await journal.close();
  });

  it('refuses a second client on the same file until the first closes', async () => {
    const file = tempFile();
    const first = new SqliteJournal(file);
    expect(() => new SqliteJournal(file)).toThrow(
      expect.objectContaining({ code: 'JOURNAL_LOCKED' }) as Error,
    );
    await first.close();
    const second = new SqliteJournal(file);
    await second.close();
  });

  it('logs every write of a payment, in order', async () => {
    const journal = new SqliteJournal(tempFile());
    await journal.insert(entry('a'));
    await journal.update(entry('a', { phase: 'RESULT', confirm: { resultCode: 'SUCCESS' } }));
    await journal.update(entry('a', { phase: 'SETTLED', confirm: { resultCode: 'SUCCESS' } }));
    expect(journal.history('t-1', 'a').map((row) => [row.phase, row.confirm_code])).toEqual([
      ['STARTED', null],
      ['RESULT', 'SUCCESS'],
      ['SETTLED', 'SUCCESS'],
    ]);
    await journal.close();
  });
});
