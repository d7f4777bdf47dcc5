/**
 * Capped exponential back-off with jitter, for reconnecting to the broker. When a relay
 * or broker restarts, every terminal loses its link at the same moment; without jitter
 * they would all come back in the same millisecond, and a busy Node process accepts only
 * ≈ 100-150 new connections a second (PLATFORM-NOTES). "Equal jitter": the n-th wait is
 * drawn uniformly from [d/2, d], d = min(cap, base × 2^n), so waits still grow, never
 * collapse to zero, and spread over half their range.
 */
export interface BackoffOptions {
  /** First wait's upper bound, in ms (default 500). */
  baseMs?: number;
  /** Largest wait, in ms (default 60 000). */
  capMs?: number;
  /** Uniform in [0, 1); injected so tests are deterministic (default Math.random). */
  random?: () => number;
}

export class Backoff {
  private attempt = 0;
  private readonly baseMs: number;
  private readonly capMs: number;
  private readonly random: () => number;

  constructor(options: BackoffOptions = {}) {
    this.baseMs = options.baseMs ?? 500;
    this.capMs = options.capMs ?? 60_000;
    this.random = options.random ?? Math.random;
  }

  /** The wait before the next attempt; each call counts one more failure. */
  next(): number {
    const ceiling = Math.min(this.capMs, this.baseMs * 2 ** Math.min(this.attempt, 30));
    this.attempt++;
    return Math.round(ceiling / 2 + (this.random() * ceiling) / 2);
  }

  /** After a success: the next failure waits the shortest time again. */
  reset(): void {
    this.attempt = 0;
  }

  get failures(): number {
    return this.attempt;
  }
}
