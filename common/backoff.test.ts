import { describe, expect, it } from 'vitest';
import {
  Backoff,
  backoffDelay,
  parseRetryAfter,
  type BackoffOptions,
  type BackoffPolicy,
} from './backoff.js';

const policy: BackoffPolicy = { initialMs: 100, maxMs: 1_000, factor: 2, maxRetryAfterMs: 5_000 };

describe('backoffDelay', () => {
  it('doubles per attempt between half and all of the step, capped', () => {
    const low = (n: number) => backoffDelay(policy, n, () => 0);
    const high = (n: number) => backoffDelay(policy, n, () => 0.999999);
    expect([0, 1, 2, 3, 4, 10].map(low)).toEqual([50, 100, 200, 400, 500, 500]);
    expect([0, 1, 2, 3, 4, 10].map(high)).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it('grows by the factor asked for, doubling when none is', () => {
    const triple = { initialMs: 100, maxMs: 10_000, factor: 3 };
    expect([0, 1, 2, 3].map((n) => backoffDelay(triple, n, () => 0.999999))).toEqual([
      100, 300, 900, 2700,
    ]);
    const plain = { initialMs: 100, maxMs: 10_000 };
    expect([0, 1, 2, 3].map((n) => backoffDelay(plain, n, () => 0.999999))).toEqual([
      100, 200, 400, 800,
    ]);
  });

  it('spreads callers that failed together', () => {
    let seed = 1;
    const random = () => ((seed = (seed * 16807) % 2147483647) - 1) / 2147483646;
    const delays = new Set(Array.from({ length: 50 }, () => backoffDelay(policy, 3, random)));
    expect(delays.size).toBeGreaterThan(30);
    for (const d of delays) expect(d).toBeGreaterThanOrEqual(400);
  });

  it('honours Retry-After, up to maxRetryAfterMs (maxMs when not given)', () => {
    expect(backoffDelay(policy, 0, () => 0, 2_000)).toBe(2_000);
    expect(backoffDelay(policy, 0, () => 0, 60_000)).toBe(5_000);
    expect(backoffDelay(policy, 3, () => 0.999999, 10)).toBe(800);
    expect(backoffDelay({ initialMs: 100, maxMs: 1_000 }, 0, () => 0, 60_000)).toBe(1_000);
  });

  it('never overflows, however many failures, nor turns a zero wait into NaN', () => {
    expect(backoffDelay(policy, 5_000, () => 0.5)).toBe(750);
    expect(backoffDelay({ initialMs: 0, maxMs: 1_000 }, 5_000, () => 0.5)).toBe(0);
  });
});

describe('Backoff', () => {
  it('doubles, stays within [d/2, d], and is capped', () => {
    const options: BackoffOptions = { initialMs: 100, maxMs: 1000 };
    const low = new Backoff({ ...options, random: () => 0 });
    const high = new Backoff({ ...options, random: () => 0.999999 });
    expect(Array.from({ length: 6 }, () => low.next())).toEqual([50, 100, 200, 400, 500, 500]);
    expect(Array.from({ length: 6 }, () => high.next())).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it('spreads agents that fail at the same moment', () => {
    let seed = 7;
    const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    const waits = Array.from({ length: 100 }, () => {
      const backoff = new Backoff({ initialMs: 1000, maxMs: 60_000, random });
      backoff.next();
      backoff.next();
      return backoff.next(); // third attempt: within [2000, 4000]
    });
    expect(Math.min(...waits)).toBeGreaterThanOrEqual(2000);
    expect(Math.max(...waits)).toBeLessThanOrEqual(4000);
    expect(new Set(waits).size).toBeGreaterThan(80);
  });

  it('counts failures, starts over after reset, and never overflows after many failures', () => {
    const backoff = new Backoff({ initialMs: 10, maxMs: 60_000, random: () => 0.5 });
    for (let i = 0; i < 2000; i++) backoff.next();
    expect(backoff.failures).toBe(2000);
    expect(backoff.next()).toBe(45_000);
    backoff.reset();
    expect(backoff.failures).toBe(0);
    expect(backoff.next()).toBe(8);
  });

  it('waits at least what a Retry-After asks', () => {
    const backoff = new Backoff({ ...policy, random: () => 0 });
    expect([backoff.next(), backoff.next(3_000), backoff.next()]).toEqual([50, 3_000, 200]);
    backoff.reset();
    expect(backoff.next()).toBe(50);
  });
});

describe('parseRetryAfter', () => {
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
