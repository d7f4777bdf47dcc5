/**
 * Capped exponential back-off with equal jitter, for every part that repeats something
 * that failed: the agent reconnecting to its broker and asking a silent reader, the relay
 * redelivering webhooks, the POS client repeating requests. When a relay or broker restarts, every terminal loses its link at the same
 * moment; without jitter they would all come back in the same millisecond, and a busy Node
 * process accepts only ≈ 100-150 new connections a second. "Equal jitter": the n-th wait
 * (n from 0) is drawn uniformly from [d/2, d], d = min(maxMs, initialMs × factor^n), so
 * waits still grow, never collapse to zero, and spread over half their range.
 */
export interface BackoffPolicy {
  /** The first wait's upper bound, in ms. */
  initialMs: number;
  /** No wait's upper bound exceeds this, however many attempts failed. */
  maxMs: number;
  /** What each failure multiplies the bound by (default 2). */
  factor?: number;
  /**
   * A Retry-After longer than this is cut to it, so a wrong header cannot stall the caller
   * (default `maxMs`).
   */
  maxRetryAfterMs?: number;
}

/** A policy for repeats of one request. */
export interface RetryPolicy extends BackoffPolicy {
  /** Attempts in all, the first included; 1 means no retry. */
  maxAttempts: number;
}

export interface BackoffOptions extends BackoffPolicy {
  /** Uniform in [0, 1); injected so tests are deterministic (default Math.random). */
  random?: () => number;
}

/**
 * The wait after `attempt` failures in a row (0: after the first), never shorter than a
 * Retry-After the other side asked for (`retryAfterMs`, up to `maxRetryAfterMs`).
 */
export function backoffDelay(
  policy: BackoffPolicy,
  attempt: number,
  random: () => number,
  retryAfterMs?: number,
): number {
  const { initialMs, maxMs, factor = 2, maxRetryAfterMs = maxMs } = policy;
  // initialMs 0 stays 0 however large factor^attempt grows (0 × Infinity is NaN).
  const grown = initialMs === 0 ? 0 : initialMs * factor ** Math.max(0, attempt);
  const ceiling = Math.min(maxMs, grown);
  const jittered = ceiling / 2 + (random() * ceiling) / 2;
  if (retryAfterMs === undefined) return Math.round(jittered);
  return Math.round(Math.max(jittered, Math.min(retryAfterMs, maxRetryAfterMs)));
}

/** The waits of one run of failures; reset() after a success. */
export class Backoff {
  private attempt = 0;
  private readonly random: () => number;

  constructor(private readonly policy: BackoffOptions) {
    this.random = policy.random ?? Math.random;
  }

  /** The wait before the next attempt; each call counts one more failure. */
  next(retryAfterMs?: number): number {
    return backoffDelay(this.policy, this.attempt++, this.random, retryAfterMs);
  }

  /** After a success: the next failure waits the shortest time again. */
  reset(): void {
    this.attempt = 0;
  }

  /** Failures counted since the last reset. */
  get failures(): number {
    return this.attempt;
  }
}

/** Parses a Retry-After header (delta seconds or an HTTP date) into milliseconds from `now`. */
export function parseRetryAfter(value: string | null, now: number): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.round(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}
