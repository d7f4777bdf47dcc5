/**
 * The embedded change bus and leadership lock, as the relay alone on its SQLite store
 * gets them from openBackend: no other relay shares the store, so the bus hears nothing
 * (not even its own relay's commits and announcements) and the lock is held at once.
 * What relays sharing a store see of each other is the conformance suites'
 * (store/testing/change-bus-conformance.ts, store/testing/leadership-lock-conformance.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { openBackend } from '../store/open.js';
import { NOW, terminalRecord, transactionRecord } from '../store/testing/store-fixtures.js';
import type { ChangeNotice } from './change-bus.js';
import { EmbeddedChangeBus, EmbeddedLeadershipLock } from './embedded.js';

const embedded = () =>
  openBackend({
    databaseUrl: undefined,
    dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'tps-embedded-')),
  });

describe('the embedded bus and lock (one relay on its SQLite store)', () => {
  it('are what a relay without a database URL gets beside its store', async () => {
    const backend = await embedded();
    expect(backend.bus).toBeInstanceOf(EmbeddedChangeBus);
    expect(backend.lock).toBeInstanceOf(EmbeddedLeadershipLock);
    await backend.close();
  });

  it("the bus delivers nothing: not its own relay's commits, not its announcements, no resync", async () => {
    const { store, bus, close } = await embedded();
    const heard: ChangeNotice[] = [];
    bus.subscribe((notice) => heard.push(notice));
    await store.createAccount({ id: 'acct-1', kind: 'merchant', createdAt: NOW });
    await store.createTerminal(terminalRecord('t-1'));
    await store.changeTransaction({ terminalId: 't-1', externalId: 'a' }, () => ({
      write: transactionRecord('t-1', 'a', 'txn-a'),
      result: null,
    }));
    await bus.announce({ kind: 'webhooks' });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(heard).toEqual([]);
    await close();
  });

  it('the lock leads at once, before start returns, and never loses the lead; stopped, it does not lead again', async () => {
    const { lock, close } = await embedded();
    const told: string[] = [];
    lock.start(
      () => told.push('lead'),
      () => told.push('lose'),
    );
    expect(told).toEqual(['lead']);
    await lock.stop();
    lock.start(
      () => told.push('lead'),
      () => told.push('lose'),
    );
    expect(told).toEqual(['lead']);
    await close();
  });
});
