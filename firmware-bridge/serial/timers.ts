/**
 * The timers the link runs on, injectable so tests and simulators need not wait for real
 * acknowledgement timeouts.
 */

export interface LinkTimers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemTimers: LinkTimers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/**
 * A clock that moves only when told: `fireNext()` jumps to the earliest pending timer and
 * runs it. Lets a test say "the line is idle now, so let the ack timeout expire".
 */
export class ManualTimers implements LinkTimers {
  now = 0;
  private nextId = 1;
  private readonly pending = new Map<number, { at: number; callback: () => void }>();

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
    let earliest: [number, { at: number; callback: () => void }] | undefined;
    for (const entry of this.pending)
      if (!earliest || entry[1].at < earliest[1].at) earliest = entry;
    if (!earliest) return false;
    this.pending.delete(earliest[0]);
    this.now = Math.max(this.now, earliest[1].at);
    earliest[1].callback();
    return true;
  }
}
