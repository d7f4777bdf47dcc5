import type { Clock, Timers } from '../clock.js';

interface Pending {
  at: number;
  callback: () => void;
}

/**
 * Timers and a clock that move only when told: `fireNext()` jumps to the earliest pending
 * timer and runs it, `advance(ms)` runs in order every timer due within `ms`. Lets a test
 * say "the line is idle now, so let the ack timeout expire" or "an hour later" without
 * waiting for either.
 */
export class ManualTimers implements Timers {
  /** This clock's time, in milliseconds. */
  now: number;
  /** The same time as a Clock, for code that reads dates. */
  readonly clock: Clock = { now: () => new Date(this.now) };
  private nextId = 1;
  private readonly pending = new Map<number, Pending>();

  /** `start`: the time the clock shows first (default 0). */
  constructor(start: number | Date = 0) {
    this.now = typeof start === 'number' ? start : start.getTime();
  }

  setTimeout(callback: () => void, ms: number): unknown {
    const id = this.nextId++;
    this.pending.set(id, { at: this.now + ms, callback });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.pending.delete(handle as number);
  }

  /** Timers set and not yet fired or cleared. */
  get size(): number {
    return this.pending.size;
  }

  /** Runs the earliest timer (ties in the order set); false when none is pending. */
  fireNext(): boolean {
    const earliest = this.earliest();
    if (!earliest) return false;
    this.pending.delete(earliest[0]);
    this.now = Math.max(this.now, earliest[1].at);
    earliest[1].callback();
    return true;
  }

  /**
   * Moves the clock `ms` forward, running on the way, in order, every timer due by then
   * (those the callbacks set included); answers how many ran.
   */
  advance(ms: number): number {
    const until = this.now + ms;
    let ran = 0;
    for (let next = this.earliest(); next && next[1].at <= until; next = this.earliest()) {
      this.fireNext();
      ran++;
    }
    this.now = until;
    return ran;
  }

  private earliest(): [number, Pending] | undefined {
    let earliest: [number, Pending] | undefined;
    for (const entry of this.pending)
      if (!earliest || entry[1].at < earliest[1].at) earliest = entry;
    return earliest;
  }
}
