/**
 * Parking a long poll: a request that waits for something to happen, for at most its
 * `wait_seconds`, and answers at once when its client goes away or the relay closes. What
 * it waits on is the caller's (a transaction's change feed, the event feed); the rules of
 * parking are here, once: it answers exactly once, and every way out lets go of the timer,
 * the cancellation listeners and the caller's subscription, so nothing parked outlives
 * its request.
 */
import type { Cancellation } from './cancellation.js';
import { systemTimers, type Timers } from '../common/clock.js';

/** A parked poll, as its watcher sees it. */
export interface Parked<T> {
  /** Answers `value` now; later calls, and the time running out, are ignored. */
  settle(value: T): void;
  /** Fails the poll with `error` (a read that failed), unless it has answered. */
  fail(error: unknown): void;
  /** Whether the poll has answered: work begun for it may stop. */
  readonly settled: boolean;
}

export interface LongPollOptions<T> {
  /** The longest wait; 0 or less answers `otherwise()` at once. */
  waitMs: number;
  /** The answer when the time runs out, the client goes away or the relay closes. */
  otherwise: () => T;
  /** Each one ends the wait early: the client's going away, the relay's closing. */
  cancelledBy: ReadonlyArray<Pick<Cancellation, 'cancelled' | 'onCancel'>>;
  timers?: Timers;
}

/**
 * Parks until `watch` settles the poll, the time runs out or a cancellation ends it.
 * `watch` subscribes to what the poll waits on and answers how to unsubscribe; it should
 * read once more after subscribing, since a change may have committed between the
 * caller's first read and the subscription. It is not called when the poll answers at once.
 */
export function longPoll<T>(
  options: LongPollOptions<T>,
  watch: (parked: Parked<T>) => () => void,
): Promise<T> {
  const { waitMs, otherwise, cancelledBy, timers = systemTimers } = options;
  if (waitMs <= 0 || cancelledBy.some((c) => c.cancelled)) return Promise.resolve(otherwise());
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    let unsubscribe: (() => void) | undefined;
    const end = () => {
      settled = true;
      timers.clearTimeout(timer);
      for (const undo of undoCancel) undo();
      unsubscribe?.();
    };
    const parked: Parked<T> = {
      settle(value) {
        if (settled) return;
        end();
        resolve(value);
      },
      fail(error) {
        if (settled) return;
        end();
        reject(error);
      },
      get settled() {
        return settled;
      },
    };
    const timer = timers.setTimeout(() => parked.settle(otherwise()), waitMs);
    const undoCancel = cancelledBy.map((c) => c.onCancel(() => parked.settle(otherwise())));
    const stop = watch(parked);
    // A watcher may settle before it has answered how to unsubscribe.
    if (settled) stop();
    else unsubscribe = stop;
  });
}
