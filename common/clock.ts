/**
 * Time and timers, injected wherever they decide something (expiry, grace periods, back-off,
 * heartbeats, acknowledgement time-outs, sweeps), so tests run in milliseconds and
 * deterministically: common/testing/manual-timers.ts moves only when told.
 */
export interface Clock {
  now(): Date;
}

export interface TimerOptions {
  /**
   * The timer does not keep the process alive (Node's `timer.unref()`): for background
   * chores, a sweep or a deadline, that must never hold up an exit. Fakes may ignore it.
   */
  unref?: boolean;
}

export interface Timers {
  /** Runs `callback` once, `ms` from now; answers a handle for clearTimeout. */
  setTimeout(callback: () => void, ms: number, options?: TimerOptions): unknown;
  /** Cancels a timer that has not run; a handle already run or cleared, or undefined, is ignored. */
  clearTimeout(handle: unknown): void;
}

export const systemClock: Clock = { now: () => new Date() };

export const systemTimers: Timers = {
  setTimeout: (callback, ms, options) => {
    const timer = setTimeout(callback, ms);
    if (options?.unref) timer.unref();
    return timer;
  },
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};

/** Resolves after `ms` on `timers`, or at once when `signal` aborts (it never rejects). */
export function sleep(ms: number, signal?: AbortSignal, timers: Timers = systemTimers) {
  return new Promise<void>((resolve) => {
    if (signal?.aborted || ms <= 0) return resolve();
    const done = () => {
      timers.clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = timers.setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
