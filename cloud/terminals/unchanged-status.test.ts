import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ReportOutOfOrder } from '../delivery/report-order.js';
import { SqliteStore } from '../store/sqlite.js';
import { NOW, terminalRecord } from '../store/testing/store-fixtures.js';
import { UnchangedStatus } from './unchanged-status.js';

const J = '0123456789abcdef';
let dir: string;
let store: SqliteStore;

beforeEach(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-unchanged-'));
  store = new SqliteStore(path.join(dir, 'relay.sqlite'));
  await store.createAccount({ id: 'acct-1', kind: 'merchant', createdAt: NOW });
  // Its status: transaction_state READY (the fixture).
  await store.createTerminal(terminalRecord('t-1'));
  await store.updateTerminalStatus('t-1', { battery_percentage: 80 }, NOW, 'ev-0', {
    journal: J,
    seq: 1,
  });
});
afterEach(async () => {
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const idle = { transaction_state: 'READY', battery_percentage: 80 } as const;

async function outcome(promise: Promise<unknown>) {
  try {
    return await promise;
  } catch (error) {
    if (error instanceof ReportOutOfOrder) return error.reason;
    throw error;
  }
}

describe('UnchangedStatus', () => {
  it('takes a heartbeat that changes nothing without writing it, and never twice', async () => {
    const unchanged = new UnchangedStatus(store);
    expect(await unchanged.take('t-1', idle, { journal: J, seq: 2, prev: 1 })).toBe(true);
    expect(await store.lastReport('t-1')).toEqual({ journal: J, seq: 1 });
    expect(await outcome(unchanged.take('t-1', idle, { journal: J, seq: 2, prev: 1 }))).toBe(
      'duplicate',
    );
    // The next one in line goes on from it; one after a missing report does not.
    expect(await unchanged.take('t-1', idle, { journal: J, seq: 3, prev: 2 })).toBe(true);
    expect(await outcome(unchanged.take('t-1', idle, { journal: J, seq: 5, prev: 4 }))).toBe('gap');
  });

  it('leaves a status that changes a reading to the store', async () => {
    const unchanged = new UnchangedStatus(store);
    expect(
      await unchanged.take('t-1', { battery_percentage: 79 }, { journal: J, seq: 2, prev: 1 }),
    ).toBe(false);
    expect(await unchanged.take('t-404', idle, { journal: J, seq: 1 })).toBe(false);
  });

  it('lets the store apply the report after a heartbeat it never saw', async () => {
    const unchanged = new UnchangedStatus(store);
    await unchanged.take('t-1', idle, { journal: J, seq: 2, prev: 1 });
    await unchanged.take('t-1', idle, { journal: J, seq: 3, prev: 2 });
    const next = await unchanged.forStore('t-1', { journal: J, seq: 4, prev: 3 });
    expect(next).toEqual({ journal: J, seq: 4, prev: 1 });
    await store.updateTerminalStatus('t-1', { battery_percentage: 70 }, NOW, 'ev-4', next);
    expect(await store.lastReport('t-1')).toEqual({ journal: J, seq: 4 });
    // Redelivered now, a heartbeat changes a reading again: the store finds it a duplicate.
    expect(await redelivered(unchanged, { journal: J, seq: 3, prev: 2 })).toBe('duplicate');
  });

  it('forgets a heartbeat once the store moved on without it (another relay wrote)', async () => {
    const unchanged = new UnchangedStatus(store);
    await unchanged.take('t-1', idle, { journal: J, seq: 2, prev: 1 });
    // Another relay applies seq 3, whose agent had seq 2 acknowledged already (prev 1).
    await store.updateTerminalStatus('t-1', { battery_percentage: 60 }, NOW, 'ev-3', {
      journal: J,
      seq: 3,
      prev: 1,
    });
    expect(await unchanged.forStore('t-1', { journal: J, seq: 4, prev: 2 })).toEqual({
      journal: J,
      seq: 4,
      prev: 2,
    });
    expect(await redelivered(unchanged, { journal: J, seq: 2, prev: 1 })).toBe('duplicate');
  });
});

/** A heartbeat sent again: taken here if it changes nothing, else written, as the relay does. */
async function redelivered(
  unchanged: UnchangedStatus,
  position: { journal: string; seq: number; prev: number },
) {
  return outcome(
    (async () => {
      if (await unchanged.take('t-1', idle, position)) return 'taken';
      const forStore = await unchanged.forStore('t-1', position);
      await store.updateTerminalStatus('t-1', idle, NOW, `ev-${position.seq}`, forStore);
      return 'written';
    })(),
  );
}
