/**
 * The behaviour every leadership lock shared by relays must show, as one suite that each
 * implementation's test file runs with its own factory (PostgreSQL:
 * ../postgres/leadership-lock.test.ts): exactly one holder at a time; the lead handed
 * over when the holder's session dies; stop() lets it go. The embedded lock, of a relay
 * alone on its store, leads at once (cluster/embedded.test.ts).
 */
import { describe, expect, it } from 'vitest';
import type { LeadershipLock } from '../../cluster/leadership-lock.js';
import { sleep, until } from './until.js';

export interface LeadershipLockFactory {
  /**
   * The locks of `n` relays sharing one store (a fresh one per call), each as its own
   * process has it, trying again every `retryMs` while another holds the lead.
   */
  open(n: number, retryMs: number): Promise<LeadershipLock[]>;
  /**
   * The sessions that hold the lock of these locks' store, as the database sees them:
   * ending one from outside is what the death of its process does.
   */
  holders(locks: LeadershipLock[]): Promise<Array<{ end(): Promise<void> }>>;
}

const RETRY_MS = 200;

/** Locks started, with what each was told. */
function started(locks: LeadershipLock[]) {
  const leading = locks.map(() => false);
  const leads = locks.map(() => 0);
  const losses = locks.map(() => 0);
  locks.forEach((lock, i) =>
    lock.start(
      () => {
        leading[i] = true;
        leads[i]!++;
      },
      () => {
        leading[i] = false;
        losses[i]!++;
      },
    ),
  );
  const leaders = () => leading.filter(Boolean).length;
  return { leading, leads, losses, leaders };
}

export function leadershipLockConformance(name: string, factory: LeadershipLockFactory): void {
  describe(`${name} leadership lock conformance`, () => {
    it('exactly one of three relays leads; the others keep trying without taking it', async () => {
      const locks = await factory.open(3, RETRY_MS);
      const { leaders, leads } = started(locks);
      await until(() => leaders() === 1, 5000, 'a leader');
      await sleep(3 * RETRY_MS); // a few tries of the others
      expect(leaders()).toBe(1);
      expect(leads.reduce((a, b) => a + b)).toBe(1);
      expect(await factory.holders(locks)).toHaveLength(1);
      await Promise.all(locks.map((lock) => lock.stop()));
    });

    it("when the holder's session dies, it hears it lost the lead and exactly one relay leads again", async () => {
      const locks = await factory.open(2, RETRY_MS);
      const { leading, leaders, losses } = started(locks);
      await until(() => leaders() === 1, 5000, 'a leader');
      const first = leading.indexOf(true);
      const holders = await factory.holders(locks);
      expect(holders).toHaveLength(1);
      await holders[0]!.end();
      // Whoever tries first leads next: the other, or the same relay once it has opened
      // a new session (only its session died; a dead process's does not come back).
      await until(() => losses[first] === 1 && leaders() === 1, 15_000, 'a leader again');
      await sleep(3 * RETRY_MS); // the other keeps trying
      expect(leaders()).toBe(1);
      expect(await factory.holders(locks)).toHaveLength(1);
      await Promise.all(locks.map((lock) => lock.stop()));
    }, 30_000);

    it('stop() lets the lock go at once: another relay takes it; the stopped one is told nothing more', async () => {
      const locks = await factory.open(2, RETRY_MS);
      const { leading, leads, losses } = started(locks);
      await until(() => leading.includes(true), 5000, 'a leader');
      const first = leading.indexOf(true);
      await locks[first]!.stop();
      await until(() => leading[1 - first] === true, 10_000, 'the other to lead');
      expect([leads[first], losses[first]]).toEqual([1, 0]);
      await locks[1 - first]!.stop();
      await until(
        async () => (await factory.holders(locks)).length === 0,
        10_000,
        'the lock to go',
      );
    });

    it('a relay stopped while another leads stops trying: it does not lead once the lock is free', async () => {
      const locks = await factory.open(2, RETRY_MS);
      const { leading, leads } = started(locks);
      await until(() => leading.includes(true), 5000, 'a leader');
      const first = leading.indexOf(true);
      await locks[1 - first]!.stop();
      await locks[first]!.stop();
      await sleep(3 * RETRY_MS);
      expect(leads[1 - first]).toBe(0);
      expect(await factory.holders(locks)).toEqual([]);
    });
  });
}
