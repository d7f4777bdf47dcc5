import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../clock.js';
import { SqliteStore } from '../store/sqlite.js';
import { terminalRecord } from '../store/store-conformance.js';
import type { TransactionRecord } from '../store/records.js';
import { DueScheduler } from './due-scheduler.js';

const soon = (ms: number) => new Date(Date.now() + ms).toISOString();

async function storeWithTerminal() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-due-'));
  const store = new SqliteStore(path.join(dir, 'relay.sqlite'));
  await store.ensureAccount('acct-1', soon(0));
  await store.createTerminal(terminalRecord('t-1'));
  return store;
}

/** A deadline written by someone else (another relay): nothing notes it here. */
async function writeDue(store: SqliteStore, dueAt: string) {
  const now = soon(0);
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

describe('due scheduler', () => {
  it('finds a deadline it was not told of when refreshed, and not before', async () => {
    const store = await storeWithTerminal();
    const fired: string[] = [];
    const due = new DueScheduler(store, systemClock, async (r) => void fired.push(r.txn.id));
    await due.start();
    await writeDue(store, soon(50));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(fired).toEqual([]);
    await due.refresh();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(fired[0]).toBe('tx-due');
    due.stop();
    await store.close();
  });

  it('runs nothing once stopped, refreshed or not, and again once started', async () => {
    const store = await storeWithTerminal();
    const fired: string[] = [];
    const due = new DueScheduler(store, systemClock, async (r) => void fired.push(r.txn.id));
    await due.start();
    due.stop();
    await writeDue(store, soon(20));
    await due.refresh();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(fired).toEqual([]);
    await due.start();
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(fired[0]).toBe('tx-due');
    due.stop();
    await store.close();
  });
});
