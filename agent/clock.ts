/**
 * Time and timers, injected wherever they decide something (expiry, back-off, heartbeats,
 * reconciliation polls), so tests run in milliseconds and deterministically.
 */
export interface Clock {
  now(): Date;
}

export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemClock: Clock = { now: () => new Date() };

export const systemTimers: Timers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
};
