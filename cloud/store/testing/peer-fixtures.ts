/**
 * What the conformance suites' cases across processes share: two handles on the same
 * data, as two relays have it, calling at once.
 */
import { ApiError } from '../../errors.js';
import {
  decideCreate,
  type DecisionEnv,
} from '../../../protocol/transaction-rules/state-machine.js';
import type { Store } from '../store.js';
import { NOW, withTerminal, type StoreFactory } from './store-fixtures.js';

export function peerFixtures(factory: StoreFactory, peer: NonNullable<StoreFactory['peer']>) {
  const env = (id: string): DecisionEnv => ({
    now: new Date(NOW),
    newTransactionId: () => `txn-${id}`,
    newCommandId: () => `cmd-${id}`,
    settings: {
      maxUnconfirmed: 100,
      startTtlMs: 60_000,
      pauseTimeoutMs: 60_000,
      gracePeriodMs: 60_000,
    },
  });
  const purchase = (terminalId: string, externalId: string, id: string) =>
    decideCreate(
      {
        kind: 'PURCHASE',
        request: {
          terminal_id: terminalId,
          external_id: externalId,
          requested_amount: 100,
          currency: 'EUR',
        },
      },
      'acct-1',
      env(id),
    );
  /** Runs each call through one handle or the other, in turn, all at once. */
  const spread = <T>(on: Store[], n: number, call: (store: Store, i: number) => Promise<T>) =>
    Promise.allSettled(Array.from({ length: n }, (_, i) => call(on[i % on.length]!, i)));
  /** Two handles on one store, each with its connections open, so that calls overlap. */
  const twoHandles = async (): Promise<[Store, Store]> => {
    const store = await withTerminal(factory);
    const other = await peer(store);
    await Promise.all(
      [store, other].flatMap((handle) =>
        Array.from({ length: 60 }, () => handle.getTerminal('t-1')),
      ),
    );
    return [store, other];
  };
  const codes = (outcomes: PromiseSettledResult<unknown>[]) =>
    outcomes.map((o) =>
      o.status === 'fulfilled'
        ? 'ok'
        : o.reason instanceof ApiError
          ? o.reason.code
          : String(o.reason),
    );
  return { env, purchase, spread, twoHandles, codes };
}
