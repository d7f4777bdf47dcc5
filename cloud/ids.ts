/** Identifiers the relay assigns. */
import { randomBytes, randomFillSync, randomInt } from 'node:crypto';
import { monotonicFactory } from 'ulid';

/**
 * ulid's own generator asks the system for one random byte per character; drawing the
 * bytes from a pool refilled 1 KB at a time gives the same randomness for a fraction of
 * the cost (ids are made several times per payment).
 */
function pooledRandom(): () => number {
  const pool = Buffer.alloc(1024);
  let next = pool.length;
  return () => {
    if (next === pool.length) {
      randomFillSync(pool);
      next = 0;
    }
    return pool[next++]! / 256;
  };
}

const ulid = monotonicFactory(pooledRandom());

/** `txn-` and a time-ordered unique suffix. */
export const newTransactionId = (): string => `txn-${ulid()}`;
export const newCommandId = (): string => `cmd-${ulid()}`;
/** Simulated terminals: `t-19` and eight digits, as the public service issues them. */
export const newSimulatorTerminalId = (): string =>
  `t-19${String(randomInt(0, 100_000_000)).padStart(8, '0')}`;
/** Real terminals: `t-` and ten digits, distinct from simulators' `t-19…`. */
export const newAgentTerminalId = (): string =>
  `t-${String(randomInt(20, 100)).padStart(2, '0')}${String(randomInt(0, 100_000_000)).padStart(8, '0')}`;
export const newUsername = (): string => `key-${randomBytes(10).toString('hex')}`;
export const newSecret = (): string => randomBytes(24).toString('base64url');
export const newAccountId = (): string => `acct-${ulid().toLowerCase()}`;
export const newEventId = (): string => `evt-${ulid()}`;
export const newWebhookId = (): string => `wh-${ulid()}`;
/** A rollout, also the `order_id` of its update orders. */
export const newRolloutId = (): string => `ro-${ulid().toLowerCase()}`;
/** The group of all terminals of an account, as an event subject. */
export const cohortOf = (accountId: string): string => `cohort-${accountId.replace(/^acct-/, '')}`;
