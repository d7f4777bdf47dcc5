/**
 * Store conformance: pairings. Found by the hash of the agent's secret; a code is claimed
 * once, before it expires, with its terminal and event in the same commit; a refused
 * claim changes nothing; a claimed pairing is collected once, with its broker credential.
 */
import { expect, it } from 'vitest';
import type { NewEvent, PairingRecord } from '../records.js';
import type { Store } from '../store.js';
import { NOW, terminalRecord, type StoreFactory } from './store-fixtures.js';

const LATER = '2026-11-21T12:05:00.000Z';
const EXPIRES = '2026-11-21T12:10:00.000Z';

const pairing = (secretHash: string, code: string, over: Partial<PairingRecord> = {}) => ({
  secretHash,
  code,
  createdAt: NOW,
  expiresAt: EXPIRES,
  ...over,
});

const claimOf = (terminalId: string, claimedAt = LATER) => ({
  accountId: 'acct-1',
  terminalId,
  name: `Till ${terminalId}`,
  cohort: 'cohort-north',
  claimedBy: 'u-1',
  claimedAt,
});

const pairedEvent = (terminalId: string): NewEvent => ({
  id: `ev-${terminalId}`,
  accountId: 'acct-1',
  subject: terminalId,
  kind: 'TerminalPaired',
  time: LATER,
  data: { terminal_id: terminalId, name: 'Till', claimed_by: 'u-1', paired_at: LATER },
});

const claim = (store: Store, code: string, terminalId: string, at = LATER) =>
  store.claimPairing(
    code,
    claimOf(terminalId, at),
    terminalRecord(terminalId),
    pairedEvent(terminalId),
  );

async function opened(factory: StoreFactory): Promise<Store> {
  const store = await factory.open();
  await store.ensureAccount('acct-1', NOW);
  return store;
}

export function pairingCases(factory: StoreFactory): void {
  it('keeps a pairing by the hash of its secret, and a code only once', async () => {
    const store = await opened(factory);
    expect(await store.createPairing(pairing('a'.repeat(64), 'ABCD2345'))).toBe(true);
    expect(await store.createPairing(pairing('b'.repeat(64), 'ABCD2345'))).toBe(false);
    expect(await store.findPairing('a'.repeat(64))).toEqual(pairing('a'.repeat(64), 'ABCD2345'));
    expect(await store.findPairing('b'.repeat(64))).toBeUndefined();
    await store.close();
  });

  it('claims a code once, with its terminal and event in the same commit', async () => {
    const store = await opened(factory);
    await store.createPairing(pairing('a'.repeat(64), 'ABCD2345'));
    expect(await claim(store, 'ABCD2345', 'agt-1')).toBe('claimed');
    expect((await store.findPairing('a'.repeat(64)))?.claim).toEqual(claimOf('agt-1'));
    expect((await store.getTerminal('agt-1'))?.accountId).toBe('acct-1');
    const events = await store.readEvents({ accountId: 'acct-1', after: 0, limit: 10 });
    expect(events.map((e) => [e.kind, e.subject])).toEqual([['TerminalPaired', 'agt-1']]);

    expect(await claim(store, 'ABCD2345', 'agt-2')).toBe('used');
    expect(await claim(store, 'ZZZZ2345', 'agt-3')).toBe('unknown');
    expect(await store.getTerminal('agt-2')).toBeUndefined();
    expect(await store.getTerminal('agt-3')).toBeUndefined();
    expect(await store.countEvents({ accountId: 'acct-1', after: 0 })).toBe(1);
    await store.close();
  });

  it('refuses the claim of an expired code, changing nothing', async () => {
    const store = await opened(factory);
    await store.createPairing(pairing('a'.repeat(64), 'ABCD2345'));
    expect(await claim(store, 'ABCD2345', 'agt-1', EXPIRES)).toBe('expired');
    expect((await store.findPairing('a'.repeat(64)))?.claim).toBeUndefined();
    expect(await store.getTerminal('agt-1')).toBeUndefined();
    expect(await store.countEvents({ accountId: 'acct-1', after: 0 })).toBe(0);
    await store.close();
  });

  it('lets one of many concurrent claims of a code win', async () => {
    const store = await opened(factory);
    const other = factory.peer ? await factory.peer(store) : store;
    await store.createPairing(pairing('a'.repeat(64), 'ABCD2345'));
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, (_, i) => claim(i % 2 ? other : store, 'ABCD2345', `agt-${i}`)),
    );
    expect(outcomes.filter((o) => o === 'claimed')).toHaveLength(1);
    expect(outcomes.filter((o) => o === 'used')).toHaveLength(7);
    expect(await store.listTerminals()).toHaveLength(1);
    if (other !== store) await other.close();
    await store.close();
  });

  it('collects a claimed pairing once, its broker credential in the same commit', async () => {
    const store = await opened(factory);
    const other = factory.peer ? await factory.peer(store) : store;
    await store.createPairing(pairing('a'.repeat(64), 'ABCD2345'));
    expect(await store.collectPairing('a'.repeat(64), '$7$early', LATER)).toBe(false);
    await claim(store, 'ABCD2345', 'agt-1');
    const outcomes = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        (i % 2 ? other : store).collectPairing('a'.repeat(64), `$7$hash-${i}`, LATER),
      ),
    );
    expect(outcomes.filter(Boolean)).toHaveLength(1);
    const won = outcomes.indexOf(true);
    expect(await store.findAgentCredential('agt-1')).toBe(`$7$hash-${won}`);
    expect((await store.findPairing('a'.repeat(64)))?.claim).toEqual({
      ...claimOf('agt-1'),
      collectedAt: LATER,
    });
    // Once spent, a credential revoked since is not put back.
    await store.deleteAgentCredential('agt-1');
    expect(await store.collectPairing('a'.repeat(64), '$7$again', LATER)).toBe(false);
    expect(await store.findAgentCredential('agt-1')).toBeUndefined();
    expect(await store.collectPairing('b'.repeat(64), '$7$none', LATER)).toBe(false);
    if (other !== store) await other.close();
    await store.close();
  });

  it('forgets pairings a day after they expired, when a new one is made', async () => {
    const store = await opened(factory);
    await store.createPairing(pairing('a'.repeat(64), 'ABCD2345'));
    const dayAfter = new Date(Date.parse(EXPIRES) + 86_400_000 + 1000).toISOString();
    await store.createPairing(pairing('b'.repeat(64), 'ABCD2345', { createdAt: dayAfter }));
    expect(await store.findPairing('a'.repeat(64))).toBeUndefined();
    expect((await store.findPairing('b'.repeat(64)))?.code).toBe('ABCD2345');
    await store.close();
  });
}
