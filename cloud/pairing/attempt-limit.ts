/**
 * Attempts counted per key in fixed windows, as the sign-in limits count failures
 * (accounts/sign-in-throttle.ts): past the limit, attempts are refused until the window
 * ends. Keys are kept in a BoundedMap, so a flood of new keys never grows memory.
 */
import { BoundedMap } from '../bounded-map.js';

const KEYS_KEPT = 100_000;

interface Window {
  start: number;
  count: number;
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
    const window = this.windows.get(key);
    const now = this.now();
    if (!window || window.count < this.limit || now - window.start >= this.windowMs) {
      return undefined;
    }
    return Math.max(1, Math.ceil((window.start + this.windowMs - now) / 1000));
  }

  count(key: string): void {
    const now = this.now();
    const window = this.windows.get(key);
    if (!window || now - window.start >= this.windowMs) {
      this.windows.set(key, { start: now, count: 1 });
    } else {
      window.count++;
    }
  }
}
