import { describe, expect, it } from 'vitest';
import { Backoff, backoffDelay, parseRetryAfter, type BackoffPolicy } from './backoff.js';

const policy: BackoffPolicy = { initialMs: 100, maxMs: 1_000, factor: 2, maxRetryAfterMs: 5_000 };

describe('backoff', () => {
  it('doubles per attempt between half and all of the step, capped', () => {
    const low = (n: number) => backoffDelay(policy, n, () => 0);
    const high = (n: number) => backoffDelay(policy, n, () => 0.999999);
    expect([0, 1, 2, 3, 4, 10].map(low)).toEqual([50, 100, 200, 400, 500, 500]);
    expect([0, 1, 2, 3, 4, 10].map(high)).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it('spreads clients that failed together', () => {
    let seed = 1;
    const random = () => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646;
    const delays = new Set(Array.from({ length: 50 }, () => backoffDelay(policy, 3, random)));
    expect(delays.size).toBeGreaterThan(30);
    for (const d of delays) expect(d).toBeGreaterThanOrEqual(400);
  });

  it('honours Retry-After, up to maxRetryAfterMs', () => {
    expect(backoffDelay(policy, 0, () => 0, 2_000)).toBe(2_000);
    expect(backoffDelay(policy, 0, () => 0, 60_000)).toBe(5_000);
    expect(backoffDelay(policy, 3, () => 0.999999, 10)).toBe(800);
  });

  it('starts again after reset()', () => {
    const backoff = new Backoff(policy, () => 0);
    expect([backoff.next(), backoff.next(), backoff.next()]).toEqual([50, 100, 200]);
    backoff.reset();
    expect(backoff.next()).toBe(50);
  });

  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-11-21T12:00:00Z');
    expect(parseRetryAfter('3', now)).toBe(3_000);
    expect(parseRetryAfter('0.5', now)).toBe(500);
    expect(parseRetryAfter('Sat, 21 Nov 2026 12:00:10 GMT', now)).toBe(10_000);
    expect(parseRetryAfter('Sat, 21 Nov 2026 11:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(null, now)).toBeUndefined();
  });
});
