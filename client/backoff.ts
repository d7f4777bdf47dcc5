/**
 * Capped exponential back-off with jitter. Attempt n waits between half and all of
 * min(maxMs, initialMs * factor^n), so clients that failed together do not retry
 * together; a Retry-After from the service is honoured (up to maxRetryAfterMs).
 */
export interface BackoffPolicy {
  /** First delay (before jitter). */
  initialMs: number;
  /** No delay exceeds this, however many attempts failed. */
  maxMs: number;
  factor: number;
  /** A Retry-After longer than this is cut to it, so a wrong header cannot stall a POS. */
  maxRetryAfterMs: number;
}

export interface RetryPolicy extends BackoffPolicy {
  /** Attempts in all, the first included; 1 means no retry. */
  maxAttempts: number;
}

/** Repeats of one request in the HTTP layer: a few quick ones. */
export const DEFAULT_RETRY: RetryPolicy = {
  initialMs: 100,
  maxMs: 2_000,
  factor: 2,
  maxRetryAfterMs: 30_000,
  maxAttempts: 3,
};

/** The payment flow's repeats (creates after failures, background confirms): unbounded, slower. */
export const DEFAULT_BACKOFF: BackoffPolicy = {
  initialMs: 250,
  maxMs: 30_000,
  factor: 2,
  maxRetryAfterMs: 120_000,
};

export function backoffDelay(
  policy: BackoffPolicy,
  attempt: number,
  random: () => number,
  retryAfterMs?: number,
): number {
  const cap = Math.min(policy.maxMs, policy.initialMs * policy.factor ** Math.max(0, attempt));
  const jittered = cap / 2 + (random() * cap) / 2;
  if (retryAfterMs === undefined) return Math.round(jittered);
  return Math.round(Math.max(jittered, Math.min(retryAfterMs, policy.maxRetryAfterMs)));
}

/** The delays of one run of failures; reset() after a success. */
export class Backoff {
  private attempt = 0;
  constructor(
    private readonly policy: BackoffPolicy,
    private readonly random: () => number,
  ) {}

  next(retryAfterMs?: number): number {
    return backoffDelay(this.policy, this.attempt++, this.random, retryAfterMs);
  }

  reset(): void {
    this.attempt = 0;
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
