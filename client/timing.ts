/**
 * Time, chance and the waits between repeats, injected wherever the client waits, so that
 * tests of back-off and retries run in microseconds instead of seconds. The back-off
 * itself is common/backoff.ts, shared with the relay and the agent.
 */
import type { BackoffPolicy, RetryPolicy } from '../common/backoff.js';
import { sleep, systemClock } from '../common/clock.js';

export interface Timing {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms`, or at once when `signal` aborts (it never rejects). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Uniform in [0, 1). */
  random(): number;
}

export const systemTiming: Timing = {
  now: () => systemClock.now().getTime(),
  random: () => Math.random(),
  sleep: (ms, signal) => sleep(ms, signal),
};

/** Repeats of one request in the HTTP layer: a few quick ones. */
export const DEFAULT_RETRY: Required<RetryPolicy> = {
  initialMs: 100,
  maxMs: 2_000,
  factor: 2,
  maxRetryAfterMs: 30_000,
  maxAttempts: 3,
};

/** The payment flow's repeats (creates after failures, background confirms): unbounded, slower. */
export const DEFAULT_BACKOFF: Required<BackoffPolicy> = {
  initialMs: 250,
  maxMs: 30_000,
  factor: 2,
  maxRetryAfterMs: 120_000,
};
