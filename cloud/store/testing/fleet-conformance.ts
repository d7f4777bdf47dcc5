/**
 * Conformance of FleetStore (ports/fleet.ts).
 * - Pairings: found by the hash of the agent's secret; a code is claimed once, before it
 *   expires, with its terminal and event in the same commit; a refused claim changes
 *   nothing; a claimed pairing is collected once, with its broker credential.
 * - Releases: kept per account; a version of an arch is published once (a release never
 *   changes under a rollout); another account's are not found.
 * - Configuration: a layer of desired configuration is replaced whole, with the settings
 *   the operator gave in it; the relay-wide layer and which settings merchants may set are
 *   one row for every account, each half replaced without touching the other, defaults
 *   before either is set; what an agent says of itself is kept per kind, the newest
 *   replacing the one before, and only for a known terminal.
 * - Rollouts: a new one supersedes its cohort's running or paused ones in its commit; an
 *   update is taken only from the revision it was decided on; a terminal's outcome is kept
 *   only for a terminal the rollout ordered; a cohort's terminals are those kept with it.
 */
import { describe, expect, it } from 'vitest';
import type {
  ConfigLayerRecord,
  NewEvent,
  PairingRecord,
  ReleaseRecord,
  RolloutRecord,
} from '../records.js';
import type { Store } from '../store.js';
import { NOW, terminalRecord, withTerminal, type StoreFactory } from './store-fixtures.js';

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
  await store.createAccount({ id: 'acct-1', kind: 'merchant', createdAt: NOW });
  return store;
}

const release = (version: string, over: Partial<ReleaseRecord> = {}): ReleaseRecord => ({
  accountId: 'acct-1',
  version,
  arch: 'linux-x64',
  manifest: `{"name":"tps-agent","version":"${version}"}`,
  signature: 'c2lnbmF0dXJl',
  archiveSha256: 'a'.repeat(64),
  archiveSize: 5_000_000_000,
  file: `tps-agent-${version}-linux-x64.tar.gz`,
  publishedAt: NOW,
  ...over,
});

const layer = (over: Partial<ConfigLayerRecord> = {}): ConfigLayerRecord => ({
  accountId: 'acct-1',
  scope: 'cohort',
  scopeId: 'cohort-north',
  config: { heartbeat_s: 60, reader: { baud_rate: 9600 } },
  updatedAt: NOW,
  operatorSettings: [],
  ...over,
});

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

export function fleetConformance(factory: StoreFactory): void {
  describe('the fleet (FleetStore)', () => {
    describe('pairings', () => {
      it('keeps a pairing by the hash of its secret, and a code only once', async () => {
        const store = await opened(factory);
        expect(await store.createPairing(pairing('a'.repeat(64), 'ABCD2345'))).toBe(true);
        expect(await store.createPairing(pairing('b'.repeat(64), 'ABCD2345'))).toBe(false);
        expect(await store.findPairing('a'.repeat(64))).toEqual(
          pairing('a'.repeat(64), 'ABCD2345'),
        );
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
    });

    describe('releases', () => {
      it('keeps a release per account, version and arch, once', async () => {
        const store = await factory.open();
        expect(await store.addRelease(release('1.0.0'))).toBe(true);
        expect(await store.addRelease(release('1.0.0', { archiveSha256: 'b'.repeat(64) }))).toBe(
          false,
        );
        expect(await store.addRelease(release('1.0.0', { arch: 'linux-arm64' }))).toBe(true);
        expect(await store.addRelease(release('1.0.0', { accountId: 'acct-2' }))).toBe(true);
        expect(await store.findRelease('acct-1', '1.0.0', 'linux-x64')).toEqual(release('1.0.0'));
        expect(await store.findRelease('acct-3', '1.0.0', 'linux-x64')).toBeUndefined();
        expect(await store.findRelease('acct-1', '1.0.1', 'linux-x64')).toBeUndefined();
        await store.close();
      });

      it('lists an account’s releases, newest published first', async () => {
        const store = await factory.open();
        await store.addRelease(release('1.0.0'));
        await store.addRelease(release('1.1.0', { publishedAt: '2026-11-22T12:00:00.000Z' }));
        await store.addRelease(release('9.9.9', { accountId: 'acct-2' }));
        expect((await store.listReleases('acct-1')).map((r) => r.version)).toEqual([
          '1.1.0',
          '1.0.0',
        ]);
        await store.close();
      });

      it('adopts the releases of other accounts, the earliest of a version and arch, once', async () => {
        const store = await factory.open();
        const later = '2026-11-22T12:00:00.000Z';
        await store.addRelease(release('1.0.0', { accountId: 'acct-op' }));
        await store.addRelease(release('1.0.0', { archiveSha256: 'b'.repeat(64) }));
        await store.addRelease(release('2.0.0', { publishedAt: later }));
        await store.addRelease(
          release('2.0.0', { accountId: 'acct-2', archiveSha256: 'c'.repeat(64) }),
        );
        await store.addRelease(release('3.0.0', { accountId: 'acct-2' }));
        expect(await store.adoptReleases('acct-op')).toBe(2);
        const adopted = await store.listReleases('acct-op');
        expect(adopted.map((r) => [r.version, r.archiveSha256[0]])).toEqual([
          ['3.0.0', 'a'],
          ['2.0.0', 'c'],
          ['1.0.0', 'a'],
        ]);
        // What could not move stays as it was; nothing moves twice.
        expect((await store.listReleases('acct-1')).map((r) => r.version)).toEqual([
          '2.0.0',
          '1.0.0',
        ]);
        expect(await store.adoptReleases('acct-op')).toBe(0);
        await store.close();
      });
    });

    describe('configuration and fleet reports', () => {
      it('replaces a layer of desired configuration whole, each scope on its own', async () => {
        const store = await withTerminal(factory);
        await store.putConfigLayer(layer());
        await store.putConfigLayer(
          layer({ scope: 'account', scopeId: '', config: { log_level: 'warn' } }),
        );
        expect(await store.getConfigLayer('acct-1', 'cohort', 'cohort-north')).toEqual(layer());
        await store.putConfigLayer(
          layer({ config: { idle_screen_text: 'Welcome' }, updatedAt: LATER }),
        );
        expect(await store.getConfigLayer('acct-1', 'cohort', 'cohort-north')).toEqual(
          layer({ config: { idle_screen_text: 'Welcome' }, updatedAt: LATER }),
        );
        expect((await store.getConfigLayer('acct-1', 'account', ''))?.config).toEqual({
          log_level: 'warn',
        });
        expect(await store.getConfigLayer('acct-1', 'cohort', 'cohort-south')).toBeUndefined();
        expect(await store.getConfigLayer('acct-2', 'cohort', 'cohort-north')).toBeUndefined();
        await store.close();
      });

      it('keeps the settings of a layer the operator gave, replaced with the layer', async () => {
        const store = await withTerminal(factory);
        const given = layer({
          config: { heartbeat_s: 60, log_level: 'debug' },
          operatorSettings: ['log_level'],
        });
        await store.putConfigLayer(given);
        expect(await store.getConfigLayer('acct-1', 'cohort', 'cohort-north')).toEqual(given);
        await store.putConfigLayer(layer({ config: { heartbeat_s: 30 }, updatedAt: LATER }));
        expect(
          (await store.getConfigLayer('acct-1', 'cohort', 'cohort-north'))?.operatorSettings,
        ).toEqual([]);
        await store.close();
      });

      it('keeps one relay-wide layer and merchant list, each half set on its own', async () => {
        const store = await opened(factory);
        expect(await store.getRelayFleetConfig()).toEqual({
          layer: {},
          layerUpdatedAt: null,
          merchantSettings: null,
          merchantSettingsUpdatedAt: null,
        });
        await store.putRelayConfigLayer({ log_level: 'warn', reader: { baud_rate: 9600 } }, NOW);
        await store.putMerchantSettings(['heartbeat_s', 'idle_screen_text'], LATER);
        expect(await store.getRelayFleetConfig()).toEqual({
          layer: { log_level: 'warn', reader: { baud_rate: 9600 } },
          layerUpdatedAt: NOW,
          merchantSettings: ['heartbeat_s', 'idle_screen_text'],
          merchantSettingsUpdatedAt: LATER,
        });
        await store.putRelayConfigLayer({ heartbeat_s: 30 }, LATER);
        await store.putMerchantSettings([], LATER);
        expect(await store.getRelayFleetConfig()).toEqual({
          layer: { heartbeat_s: 30 },
          layerUpdatedAt: LATER,
          merchantSettings: [],
          merchantSettingsUpdatedAt: LATER,
        });
        // No account's layer: the relay's is none of theirs.
        expect(await store.getConfigLayer('acct-1', 'account', '')).toBeUndefined();
        await store.close();
      });

      it('keeps the newest report of each kind from a known terminal only', async () => {
        const store = await withTerminal(factory);
        const report = (kind: 'config' | 'facts', body: unknown, receivedAt = NOW) => ({
          terminalId: 't-1',
          kind,
          body,
          receivedAt,
        });
        await store.putFleetReport(report('config', { version: 'a', status: 'PENDING' }));
        await store.putFleetReport(report('facts', { agent_version: '1.0.0' }));
        await store.putFleetReport(report('config', { version: 'a', status: 'APPLIED' }, LATER));
        await store.putFleetReport({ ...report('config', {}), terminalId: 't-unknown' });
        expect(await store.fleetReports('t-1')).toEqual([
          report('config', { version: 'a', status: 'APPLIED' }, LATER),
          report('facts', { agent_version: '1.0.0' }),
        ]);
        expect(await store.fleetReports('t-unknown')).toEqual([]);
        await store.close();
      });
    });

    describe('rollouts', () => {
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
        expect((await store.listRollouts({ state: 'superseded' })).map((r) => r.id)).toEqual([
          'ro-1',
        ]);
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
            {
              ...next,
              state: 'paused',
              terminals: [{ terminalId: 't-9', wave: 2, orderedAt: LATER }],
            },
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
        await store.createAccount({ id: 'acct-1', kind: 'merchant', createdAt: NOW });
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
    });
  });
}
