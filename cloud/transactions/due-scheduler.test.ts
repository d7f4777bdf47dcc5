import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../../common/testing/manual-timers.js';
import { SqliteStore } from '../store/sqlite.js';
import { terminalRecord } from '../store/testing/store-conformance.js';
import type { TransactionRecord } from '../store/records.js';
import { DueScheduler } from './due-scheduler.js';

const START = Date.parse('2026-03-01T12:00:00.000Z');
const at = (ms: number) => new Date(START + ms).toISOString();

async function storeWithTerminal() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-due-'));
  const store = new SqliteStore(path.join(dir, 'relay.sqlite'));
  await store.createAccount({ id: 'acct-1', kind: 'merchant', createdAt: at(0) });
  await store.createTerminal(terminalRecord('t-1'));
  return store;
}

/** A deadline written by someone else (another relay): nothing notes it here. */
async function writeDue(store: SqliteStore, dueAt: string) {
  const now = at(0);
  const record: TransactionRecord = {
    txn: {
      id: 'tx-due',
      terminal_id: 't-1',
      external_id: 'e-due',
      type: 'PURCHASE',
      state: 'CONFIRMED',
      created_at: now,
      updated_at: now,
      requested_amount: 100,
      currency: 'EUR',
    },
    accountId: 'acct-1',
    dueAt,
    version: 1,
  };
  await store.changeTransaction({ terminalId: 't-1', externalId: 'e-due' }, () => ({
    write: record,
    result: undefined,
  }));
}

/** A scheduler on fake time, and a promise of its next firing. */
function scheduler(store: SqliteStore) {
  const timers = new ManualTimers(START);
  const fired: string[] = [];
  let onFire = () => {};
  const due = new DueScheduler(
    store,
    timers.clock,
    async (record) => {
      fired.push(record.txn.id);
      onFire();
    },
    timers,
  );
  const firing = () => new Promise<void>((resolve) => (onFire = resolve));
  return { timers, fired, due, firing };
}

describe('due scheduler', () => {
  it('finds a deadline it was not told of when refreshed, and not before', async () => {
    const store = await storeWithTerminal();
    const { timers, fired, due, firing } = scheduler(store);
    await due.start();
    await writeDue(store, at(50));
    expect(timers.size).toBe(0);
    timers.advance(300);
    expect(fired).toEqual([]);
    await due.refresh();
    expect(timers.size).toBe(1);
    const fires = firing();
    expect(timers.fireNext()).toBe(true);
    await fires;
    expect(fired).toEqual(['tx-due']);
    due.stop();
    await store.close();
  });

  it('waits for the deadline, and moves to an earlier one it is told of', async () => {
    const store = await storeWithTerminal();
    const { timers, fired, due, firing } = scheduler(store);
    await due.start();
    due.note(at(60_000));
    due.note(at(90_000)); // later than the one armed: changes nothing
    expect(timers.size).toBe(1);
    await writeDue(store, at(5_000));
    due.note(at(5_000));
    expect(timers.size).toBe(1);
    const fires = firing();
    timers.advance(4_999);
    expect(fired).toEqual([]);
    timers.advance(1);
    await fires;
    expect(fired).toEqual(['tx-due']);
    expect(timers.now).toBe(START + 5_000);
    due.stop();
    expect(timers.size).toBe(0);
    await store.close();
  });

  it('runs nothing once stopped, refreshed or not, and again once started', async () => {
    const store = await storeWithTerminal();
    const { timers, fired, due, firing } = scheduler(store);
    await due.start();
    due.stop();
    await writeDue(store, at(20));
    await due.refresh();
    due.note(at(20));
    expect(timers.size).toBe(0);
    timers.advance(200);
    expect(fired).toEqual([]);
    await due.start();
    expect(timers.size).toBe(1);
    const fires = firing();
    timers.fireNext();
    await fires;
    expect(fired[0]).toBe('tx-due');
    due.stop();
    await store.close();
  });
});
