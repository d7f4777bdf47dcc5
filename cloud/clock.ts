/** Time, injected wherever it decides something, so tests need not wait for it. */
export interface Clock {
  now(): Date;
}
export const systemClock: Clock = { now: () => new Date() };
