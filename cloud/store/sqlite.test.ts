import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { Worker } from 'node:worker_threads';
import { describe, expect, it, vi } from 'vitest';
import type { Store } from './store.js';
import { SQLITE_MIGRATIONS, sqliteFileAtVersion } from './sqlite-migrations.js';
import { SqliteStore } from './sqlite.js';
import { accountStatements } from './sqlite-accounts.js';
import { terminalStatements } from './sqlite-terminals.js';
import { transactionStatements } from './sqlite-transactions.js';
import type { SqliteWriter } from './sqlite-writer.js';
import {
  storeConformance,
  terminalRecord,
  transactionRecord,
} from './testing/store-conformance.js';

const tempFile = () =>
  path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tps-store-')), 'relay.sqlite');

/** Stores on temporary files, each reopened and shared on its own file. */
function sqliteFactory(options: ConstructorParameters<typeof SqliteStore>[1] = {}) {
  const files = new Map<Store, string>();
  return {
    async open() {
      const file = tempFile();
      const store = new SqliteStore(file, options);
      files.set(store, file);
      return store;
    },
    async reopen(store: Store) {
      const file = files.get(store)!;
      await store.close();
      return new SqliteStore(file, options);
    },
    async peer(store: Store) {
      return new SqliteStore(files.get(store)!, options);
    },
  };
}

/** The settings a fresh store on the file reads: what reached the disk. */
async function settingsOnDisk(file: string, keys: string[]): Promise<Record<string, unknown>> {
  const store = new SqliteStore(file);
  const values = Object.fromEntries(
    await Promise.all(keys.map(async (key) => [key, await store.getSetting(key)])),
  );
  await store.close();
  return values;
}

storeConformance('SQLite', sqliteFactory());
// The same suite with every write committed on the writer thread, as under load.
storeConformance('SQLite, writes on the writer thread', sqliteFactory({ writerThread: 'always' }));

describe('SQLite store specifics', () => {
  it('refuses a store written by a newer release, saying what to run', async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'tps-store-')), 'relay.sqlite');
    await new SqliteStore(file).close();
    const db = new Database(file);
    db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(
      999,
      new Date().toISOString(),
    );
    db.close();
    expect(() => new SqliteStore(file)).toThrow(
      /has schema version 999, newer than this release knows \(\d+\).*run that release or a newer one/,
    );
  });

  it('writes stay in order when commits move between the writer thread and the relay thread', async () => {
    const file = tempFile();
    let busy = true;
    const store = new SqliteStore(file, { writerThread: { busy: () => busy } });
    const writer = (store as unknown as { writer: SqliteWriter }).writer;
    // Busy: the thread starts; until it is up, commits stay on the relay thread.
    await store.createAccount({ id: 'acct-1', kind: 'merchant', createdAt: 'now' });
    await vi.waitUntil(() => writer.threadUp, { timeout: 10_000 });
    const burst = Array.from({ length: 500 }, (_, i) => store.putSetting('k', String(i)));
    await new Promise((resolve) => setImmediate(resolve));
    // The burst went to the thread. No longer busy, but the thread still holds the burst:
    // the next write waits for it, then commits here.
    busy = false;
    const last = store.putSetting('k', 'last');
    await Promise.all([...burst, last]);
    expect(await store.getSetting('k')).toBe('last');
    await store.putSetting('light', 'yes');
    await store.close();
    expect(await settingsOnDisk(file, ['k', 'light'])).toEqual({ k: 'last', light: 'yes' });
  });

  it('commits on the relay thread again once the loop is no longer busy, though writes keep coming', async () => {
    const file = tempFile();
    let busy = true;
    const store = new SqliteStore(file, { writerThread: { busy: () => busy } });
    const writer = (
      store as unknown as { writer: { thread?: { worker: Worker }; withThread: Set<number> } }
    ).writer;
    await store.createAccount({ id: 'acct-1', kind: 'merchant', createdAt: 'now' });
    await vi.waitUntil(() => (writer as unknown as SqliteWriter).threadUp, { timeout: 10_000 });
    const posted = vi.spyOn(writer.thread!.worker, 'postMessage');
    // A steady trickle of writes, each made before the one before it has come back.
    const trickle = async (from: number, count: number, pause: () => Promise<unknown>) => {
      const writes: Array<Promise<void>> = [];
      for (let i = from; i < from + count; i++) {
        writes.push(store.putSetting('k', String(i)));
        await pause();
      }
      return writes;
    };
    const nextTurn = () => new Promise((r) => setImmediate(r));
    const busyWrites = [
      ...(await trickle(0, 50, () => new Promise((r) => setTimeout(r, 1)))),
      // Faster at the end, so that the thread still holds writes when the load drops.
      ...(await trickle(50, 20, nextTurn)),
    ];
    expect(posted.mock.calls.length).toBeGreaterThan(3);
    expect(writer.withThread.size).toBeGreaterThan(0);
    busy = false;
    const postedWhileBusy = posted.mock.calls.length;
    const lightWrites = await trickle(70, 200, nextTurn);
    await Promise.all([...busyWrites, ...lightWrites]);
    // Nothing more went to the thread: the light writes waited for its last ones, then
    // committed here, in order.
    expect(posted.mock.calls.length).toBe(postedWhileBusy);
    expect(await store.getSetting('k')).toBe('269');
    await store.close();
    expect(await settingsOnDisk(file, ['k'])).toEqual({ k: '269' });
  });

  it('writes of one turn for an idle writer thread go in one message; for a committing one, as each task ends', async () => {
    const file = tempFile();
    const store = new SqliteStore(file, { writerThread: 'always' });
    await store.createAccount({ id: 'acct-1', kind: 'merchant', createdAt: 'now' });
    const writer = (
      store as unknown as { writer: { thread: { worker: Worker }; withThread: Set<number> } }
    ).writer;
    const posted = vi.spyOn(writer.thread.worker, 'postMessage');
    /**
     * Writes from `count` immediates queued together: each its own task, all in one check
     * phase of the loop (timers could fall on either side of a millisecond).
     */
    const fromTasks = (count: number, key: string) =>
      new Promise<Array<Promise<void>>>((resolve) => {
        const writes: Array<Promise<void>> = [];
        for (let i = 0; i < count; i++) {
          setImmediate(() => {
            writes.push(store.putSetting(key, String(i)));
            if (writes.length === count) resolve(writes);
          });
        }
      });
    // The thread holds nothing: ten tasks' writes wait for the end of the turn, together.
    expect(writer.withThread.size).toBe(0);
    await Promise.all(await fromTasks(10, 'idle'));
    expect(posted.mock.calls.length).toBe(1);
    // The thread holds a write (a long commit under way): each task's write follows at once.
    posted.mockClear();
    const first = store.putSetting('large', 'x'.repeat(32 * 1024 * 1024));
    await new Promise((r) => setImmediate(r));
    expect(writer.withThread.size).toBe(1);
    const busy = await fromTasks(10, 'busy');
    expect(writer.withThread.size).toBeGreaterThan(1);
    expect(posted.mock.calls.length).toBe(11);
    await Promise.all([first, ...busy]);
    expect(await store.getSetting('idle')).toBe('9');
    expect(await store.getSetting('busy')).toBe('9');
    await store.close();
  });

  it('when the writer thread dies, its writes fail and later ones are committed on the main thread', async () => {
    const file = tempFile();
    const store = new SqliteStore(file, { writerThread: 'always' });
    await store.putSetting('before', '1');
    const writer = (store as unknown as { writer: { thread: { worker: Worker } } }).writer;
    await writer.thread.worker.terminate();
    await store.putSetting('after', '2');
    await store.close();
    expect(await settingsOnDisk(file, ['before', 'after'])).toEqual({ before: '1', after: '2' });
  });

  it('runs in WAL mode with synchronous=FULL, and applies each migration once', async () => {
    const file = tempFile();
    await new SqliteStore(file).close();
    await new SqliteStore(file).close();
    const db = new Database(file, { readonly: true });
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    const versions = db.prepare('SELECT version FROM schema_migrations').all();
    expect(versions).toEqual(SQLITE_MIGRATIONS.map(({ version }) => ({ version })));
    db.close();
    const store = new SqliteStore(file);
    // synchronous is a per-connection setting: read it where it is set.
    expect(
      (store as unknown as { db: Database.Database }).db.pragma('synchronous', { simple: true }),
    ).toBe(2);
    await store.close();
  });

  it("brings a file of today's accounts (schema version 12) up to date: its account is a merchant's", async () => {
    const file = tempFile();
    const old = sqliteFileAtVersion(file, 12);
    old.exec(`
      INSERT INTO accounts VALUES ('acct-1', 'then');
      INSERT INTO credentials VALUES ('acct-user', 'hash', 'acct-1', NULL, 'then');
    `);
    old.close();
    const store = new SqliteStore(file);
    expect(await store.listAccounts()).toEqual([
      { id: 'acct-1', kind: 'merchant', createdAt: 'then' },
    ]);
    expect(await store.findCredential('acct-user')).toMatchObject({ accountId: 'acct-1' });
    await store.close();
  });

  it('brings a file of schema version 7 up to date: paired terminals get their name and cohort', async () => {
    const file = tempFile();
    const old = sqliteFileAtVersion(file, 7);
    const claim = JSON.stringify({
      accountId: 'acct-1',
      terminalId: 't-paired',
      name: 'Front till',
      cohort: 'cohort-front',
      claimedBy: 'u',
      claimedAt: 'then',
    });
    old.exec(`
      INSERT INTO accounts VALUES ('acct-1', 'then');
      INSERT INTO terminals (id, account_id, kind, capabilities, status, created_at)
        VALUES ('t-paired', 'acct-1', 'AGENT', '{}', '{"terminal_id":"t-paired"}', 'then'),
               ('t-made', 'acct-1', 'AGENT', '{}', '{"terminal_id":"t-made"}', 'then');
      INSERT INTO pairings VALUES ('${'a'.repeat(64)}', 'ABCD2345', 'then', 'then', '${claim}');
    `);
    old.close();

    const store = new SqliteStore(file);
    expect(await store.getTerminal('t-paired')).toMatchObject({
      name: 'Front till',
      cohort: 'cohort-front',
    });
    expect(await store.getTerminal('t-made')).not.toHaveProperty('cohort');
    await store.close();
  });

  it('brings a file of schema version 4 up to date: its events and transactions read as before', async () => {
    const file = tempFile();
    // That release wrote in WAL mode, which the file keeps.
    const wal = new Database(file);
    wal.pragma('journal_mode = WAL');
    wal.close();
    const old = sqliteFileAtVersion(file, 4);
    old.exec(`
      INSERT INTO accounts VALUES ('acct-1', 'then');
      INSERT INTO terminals (id, account_id, kind, capabilities, status, created_at)
        VALUES ('t-1', 'acct-1', 'SIMULATOR', '{}', '{"terminal_id":"t-1"}', 'then'),
               ('t-2', 'acct-1', 'SIMULATOR', '{}', '{"terminal_id":"t-2"}', 'then');
    `);
    const event = old.prepare(
      "INSERT INTO events (id, account_id, subject, kind, time, data) VALUES (?, 'acct-1', ?, 'TerminalStatus', 'then', '{}')",
    );
    for (let i = 0; i < 30; i++) event.run(`evt-${i}`, i % 3 === 0 ? 't-1' : 't-2');
    old.close();

    const store = new SqliteStore(file);
    const events = await store.readEvents({
      accountId: 'acct-1',
      after: 0,
      subject: 't-1',
      limit: 100,
    });
    expect(events.map((e) => e.id)).toEqual(Array.from({ length: 10 }, (_, i) => `evt-${i * 3}`));
    expect(await store.countEvents({ accountId: 'acct-1', after: 0, subject: 't-2' })).toBe(20);
    const record = transactionRecord('t-1', 'order-1', 'txn-1');
    await store.changeTransaction(
      { terminalId: 't-1', externalId: 'order-1', forCreate: true },
      (ctx) => {
        expect(ctx.terminalOwner).toBe('acct-1');
        return { write: record, result: undefined };
      },
    );
    expect((await store.listUnconfirmed('t-1')).map((r) => r.txn.id)).toEqual([record.txn.id]);
    const db = (store as unknown as { db: Database.Database }).db;
    const indexes = db
      .prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND name NOT LIKE 'sqlite_%'")
      .all()
      .map((row) => (row as { name: string }).name);
    expect(indexes).toEqual(
      expect.arrayContaining(['events_by_account', 'transactions_unconfirmed']),
    );
    expect(indexes).not.toContain('events_by_subject');
    expect(indexes).not.toContain('transactions_by_state');
    await store.close();
  });

  it('makes new files with 16 KB pages, and keeps using a file made with 4 KB pages', async () => {
    const fresh = tempFile();
    await new SqliteStore(fresh).close();
    const freshDb = new Database(fresh, { readonly: true });
    expect(freshDb.pragma('page_size', { simple: true })).toBe(16_384);
    freshDb.close();

    // A store file made before: 4 KB pages, already in WAL mode, with a transaction in it.
    const old = tempFile();
    const before = new Database(old);
    before.pragma('page_size = 4096');
    before.pragma('journal_mode = WAL');
    before.close();
    const store = new SqliteStore(old);
    await store.createAccount({ id: 'acct-1', kind: 'merchant', createdAt: 'now' });
    await store.createTerminal(terminalRecord('t-1'));
    await store.close();
    const reopened = new SqliteStore(old);
    expect((await reopened.getTerminal('t-1'))?.accountId).toBe('acct-1');
    const db = (reopened as unknown as { db: Database.Database }).db;
    expect(db.pragma('page_size', { simple: true })).toBe(4096);
    // The checkpoint threshold is the same ~16 MB whatever the page size.
    expect(db.pragma('wal_autocheckpoint', { simple: true })).toBe(4096);
    await reopened.close();
  });

  it('a transaction another handle moved since this one kept it: the change is decided again on the file', async () => {
    const file = tempFile();
    const store = new SqliteStore(file);
    await store.createAccount({
      id: 'acct-1',
      kind: 'merchant',
      createdAt: '2026-11-21T12:00:00.000Z',
    });
    await store.createTerminal(terminalRecord('t-1'));
    const key = { terminalId: 't-1', externalId: 'order-1' };
    const first = transactionRecord('t-1', 'order-1', 'txn-1');
    await store.changeTransaction({ ...key, forCreate: true }, () => ({
      write: first,
      result: undefined,
    }));
    // Another relay process on the same file moves the transaction on.
    const other = new SqliteStore(file);
    const moved = {
      ...first,
      txn: { ...first.txn, state: 'AWAITING_CONFIRM' as const },
      version: 2,
    };
    await other.changeTransaction(key, () => ({ write: moved, result: undefined }));
    // This handle still keeps version 1: its first decision is stale and fails the commit
    // check, the second is taken on the file's version 2.
    const seen: (number | undefined)[] = [];
    await store.changeTransaction(key, (ctx) => {
      seen.push(ctx.current?.version);
      const current = ctx.current!;
      return { write: { ...current, version: current.version + 1 }, result: undefined };
    });
    expect(seen).toEqual([1, 2]);
    const read = (await store.getTransaction('t-1', 'order-1'))!;
    expect(read.version).toBe(3);
    // Every later read answers with this same object: it cannot be changed in place.
    expect(() => Object.assign(read.txn, { state: 'FAILED' })).toThrow(TypeError);
    expect(await store.getTransaction('t-1', 'order-1')).toBe(read);
    expect((await other.getTransactionById('txn-1'))?.txn.state).toBe('AWAITING_CONFIRM');
    await Promise.all([store.close(), other.close()]);
  });

  it('a write that fails in a shared commit leaves the writes beside it committed', async () => {
    const file = tempFile();
    const store = new SqliteStore(file);
    await store.createAccount({ id: 'acct-1', kind: 'merchant', createdAt: 'now' });
    await store.createTerminal(terminalRecord('t-1'));
    // The same turn: one commit. The duplicate terminal fails inside the database.
    const writes = [
      store.putSetting('before', '1'),
      store.createTerminal(terminalRecord('t-1')),
      store.createTerminal(terminalRecord('t-2')),
      store.putSetting('after', '2'),
    ];
    const outcomes = await Promise.allSettled(writes);
    expect(outcomes.map((o) => o.status)).toEqual([
      'fulfilled',
      'rejected',
      'fulfilled',
      'fulfilled',
    ]);
    expect(outcomes[1]).toMatchObject({ reason: { code: 'SQLITE_CONSTRAINT_PRIMARYKEY' } });
    await store.close();
    const reopened = new SqliteStore(file);
    expect(await reopened.getSetting('before')).toBe('1');
    expect(await reopened.getSetting('after')).toBe('2');
    expect((await reopened.listTerminals()).map((t) => t.id)).toEqual(['t-1', 't-2']);
    await reopened.close();
  });

  it('the database refuses a second transaction for the same pair', async () => {
    const file = tempFile();
    await new SqliteStore(file).close();
    const db = new Database(file);
    db.prepare("INSERT INTO accounts (id, created_at) VALUES ('a', 'now')").run();
    db.prepare(
      "INSERT INTO terminals (id, account_id, kind, capabilities, status, created_at) VALUES ('t', 'a', 'SIMULATOR', '{}', '{}', 'now')",
    ).run();
    const insert = db.prepare(
      "INSERT INTO transactions (id, terminal_id, external_id, account_id, state, version, body) VALUES (?, 't', 'same', 'a', 'PROCESSING', 1, '{}')",
    );
    insert.run('txn-1');
    expect(() => insert.run('txn-2')).toThrow(/UNIQUE/);
    db.close();
  });
});

describe('SQLite store query plans', () => {
  it('looks transactions and events up through indexes, never by scanning a table', async () => {
    const file = tempFile();
    const store = new SqliteStore(file);
    type Statements = Record<string, Database.Statement>;
    const internals = store as unknown as {
      db: Database.Database;
      changes: { statements: Statements };
    };
    const { db } = internals;
    // The statements the ports read with, and those a change decides on.
    const statements: Statements = {
      ...accountStatements(db),
      ...terminalStatements(db),
      ...transactionStatements(db),
      ...internals.changes.statements,
    };
    // Every parameter bound to null: positional ones (?) or named ones (@name).
    const parameters = (sql: string) => {
      const named = [...sql.matchAll(/@(\w+)/g)].map((m) => m[1]!);
      return named.length > 0
        ? [Object.fromEntries(named.map((name) => [name, null]))]
        : sql
            .split('?')
            .slice(1)
            .map(() => null);
    };
    const plan = (sql: string) =>
      (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...parameters(sql)) as Array<{ detail: string }>)
        .map((row) => row.detail)
        .join('; ');
    expect(plan(statements.activeOnTerminal!.source)).toMatch(/transactions_unconfirmed/);
    expect(plan(statements.unconfirmed!.source)).toMatch(/transactions_unconfirmed/);
    expect(plan(statements.unconfirmedCount!.source)).toMatch(
      /COVERING INDEX transactions_unconfirmed/,
    );
    // A terminal's events: the account's index, its subject read from the index itself.
    expect(
      plan(
        'SELECT * FROM events WHERE account_id = ? AND position > ? AND subject = ? ORDER BY position LIMIT 10',
      ),
    ).toMatch(/^SEARCH events USING INDEX events_by_account \(account_id=\? AND position>\?\)$/);
    for (const statement of Object.values(statements)) {
      expect(plan(statement.source), statement.source).not.toMatch(/SCAN (transactions|events)/);
    }
    await store.close();
  });
});
