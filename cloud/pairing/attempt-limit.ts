/**
 * Attempts counted per key in fixed windows, as the sign-in limits count failures
 * (common/sign-in-throttle.ts): past the limit, attempts are refused until the window
 * ends. Keys are kept in a BoundedMap, so a flood of new keys never grows memory.
 *
 * An attempt is taken before the work it counts (a store call) and given back if the work
 * succeeded: checked and counted in one synchronous step, so concurrent attempts cannot
 * all pass one check while none has been counted yet.
 */
import { BoundedMap } from '../../common/bounded-map.js';

const KEYS_KEPT = 100_000;

interface Window {
  start: number;
  count: number;
}

/** An attempt taken; `giveBack` uncounts it (once), if its window is still the current one. */
export interface TakenAttempt {
  giveBack(): void;
}

export class AttemptLimit {
  private readonly windows = new BoundedMap<string, Window>(KEYS_KEPT);

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly now: () => number,
  ) {}

  /** Seconds until the key may try again, when its window is full; undefined when it may. */
  check(key: string): number | undefined {
    const window = this.current(key);
    if (!window || window.count < this.limit) return undefined;
    return Math.max(1, Math.ceil((window.start + this.windowMs - this.now()) / 1000));
  }

  /** Counts one attempt of `key`: the seconds to wait instead, when its window is full. */
  take(key: string): TakenAttempt | { retryAfterS: number } {
    const retryAfterS = this.check(key);
    if (retryAfterS !== undefined) return { retryAfterS };
    let window = this.current(key);
    if (window) window.count++;
    else this.windows.set(key, (window = { start: this.now(), count: 1 }));
    let given = false;
    return {
      giveBack: () => {
        if (given || this.current(key) !== window) return;
        given = true;
        window.count--;
      },
    };
  }

  /** The key's window, unless it has ended. */
  private current(key: string): Window | undefined {
    const window = this.windows.get(key);
    return window && this.now() - window.start < this.windowMs ? window : undefined;
  }
}
