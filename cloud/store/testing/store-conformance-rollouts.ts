/**
 * Store conformance: rollouts. A new one supersedes its cohort's running or paused ones
 * in its commit; an update is taken only from the revision it was decided on; a
 * terminal's outcome is kept only for a terminal the rollout ordered; a cohort's
 * terminals are those kept with it.
 */
import { expect, it } from 'vitest';
import type { RolloutRecord } from '../records.js';
import type { Store } from '../store.js';
import { NOW, terminalRecord, type StoreFactory } from './store-fixtures.js';

const LATER = '2026-11-21T12:05:00.000Z';

const rollout = (id: string, over: Partial<RolloutRecord> = {}): RolloutRecord => ({
  id,
  accountId: 'acct-1',
  cohort: 'cohort-north',
  version: '1.4.2',
  arch: 'linux-x64',
  sharePercent: 10,
  maxFailurePercent: 10,
  deadlineS: 900,
  state: 'running',
  wave: 1,
  waveStartedAt: NOW,
  createdAt: NOW,
  updatedAt: NOW,
  revision: 0,
  terminals: [{ terminalId: 't-1', wave: 1, orderedAt: NOW }],
  ...over,
});

const inCohort = (store: Store, terminalId: string, cohort: string) =>
  store.createTerminal({ ...terminalRecord(terminalId), cohort });

export function rolloutCases(factory: StoreFactory): void {
  it('keeps a rollout with its terminals; a newer one supersedes its cohort’s', async () => {
    const store = await factory.open();
    await store.createRollout(rollout('ro-1'));
    await store.createRollout(rollout('ro-other', { cohort: 'cohort-south', terminals: [] }));
    expect(await store.getRollout('ro-1')).toEqual(rollout('ro-1'));
    await store.createRollout(rollout('ro-2', { createdAt: LATER, terminals: [] }));
    expect(await store.getRollout('ro-1')).toMatchObject({
      state: 'superseded',
      supersededBy: 'ro-2',
      revision: 1,
    });
    expect((await store.getRollout('ro-other'))?.state).toBe('running');
    expect((await store.listRollouts({ accountId: 'acct-1' })).map((r) => r.id)).toEqual([
      'ro-2',
      'ro-other',
      'ro-1',
    ]);
    expect((await store.listRollouts({ state: 'superseded' })).map((r) => r.id)).toEqual(['ro-1']);
    expect(await store.listRollouts({ accountId: 'acct-2' })).toEqual([]);
    expect(await store.getRollout('ro-none')).toBeUndefined();
    await store.close();
  });

  it('updates a rollout only from the revision it was decided on', async () => {
    const store = await factory.open();
    await store.createRollout(rollout('ro-1'));
    const next = rollout('ro-1', {
      wave: 2,
      waveStartedAt: LATER,
      updatedAt: LATER,
      terminals: [
        { terminalId: 't-1', wave: 1, orderedAt: NOW },
        { terminalId: 't-2', wave: 2, orderedAt: LATER },
      ],
    });
    expect(await store.updateRollout(next, 0)).toBe(true);
    // Decided on the same revision elsewhere: refused, nothing of it written.
    expect(
      await store.updateRollout(
        { ...next, state: 'paused', terminals: [{ terminalId: 't-9', wave: 2, orderedAt: LATER }] },
        0,
      ),
    ).toBe(false);
    expect(await store.getRollout('ro-1')).toEqual({ ...next, revision: 1 });
    await store.close();
  });

  it('keeps a terminal’s outcome only where the rollout ordered it', async () => {
    const store = await factory.open();
    await store.createRollout(rollout('ro-1'));
    const outcome = { result: 'rolled_back', reason: 'not healthy within 90 s', at: LATER };
    expect(await store.recordRolloutOutcome('ro-1', 't-1', outcome)).toBe(true);
    expect(await store.recordRolloutOutcome('ro-1', 't-2', outcome)).toBe(false);
    expect(await store.recordRolloutOutcome('ro-9', 't-1', outcome)).toBe(false);
    expect((await store.getRollout('ro-1'))?.terminals).toEqual(
      [{ terminalId: 't-1', wave: 1, orderedAt: NOW, ...outcome, reportedAt: LATER }].map(
        ({ at: _at, ...t }) => t,
      ),
    );
    await store.close();
  });

  it('finds the terminals of a cohort, as each was claimed into it', async () => {
    const store = await factory.open();
    await store.ensureAccount('acct-1', NOW);
    await inCohort(store, 't-1', 'cohort-north');
    await inCohort(store, 't-2', 'cohort-south');
    await inCohort(store, 't-3', 'cohort-north');
    await store.createTerminal(terminalRecord('t-4'));
    expect(await store.cohortTerminals('acct-1', 'cohort-north')).toEqual([
      { id: 't-1', connected: false },
      { id: 't-3', connected: false },
    ]);
    expect(await store.cohortTerminals('acct-2', 'cohort-north')).toEqual([]);
    await store.close();
  });
}
