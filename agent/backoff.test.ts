import { describe, expect, it } from 'vitest';
import { Backoff } from './backoff.js';

describe('jittered back-off', () => {
  it('doubles, stays within [d/2, d], and is capped', () => {
    const low = new Backoff({ baseMs: 100, capMs: 1000, random: () => 0 });
    const high = new Backoff({ baseMs: 100, capMs: 1000, random: () => 0.999999 });
    expect(Array.from({ length: 6 }, () => low.next())).toEqual([50, 100, 200, 400, 500, 500]);
    expect(Array.from({ length: 6 }, () => high.next())).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it('spreads agents that fail at the same moment', () => {
    let seed = 7;
    const random = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
    const waits = Array.from({ length: 100 }, () => {
      const backoff = new Backoff({ baseMs: 1000, capMs: 60_000, random });
      backoff.next();
      backoff.next();
      return backoff.next(); // third attempt: within [2000, 4000]
    });
    expect(Math.min(...waits)).toBeGreaterThanOrEqual(2000);
    expect(Math.max(...waits)).toBeLessThanOrEqual(4000);
    expect(new Set(waits).size).toBeGreaterThan(80);
  });

  it('starts over after reset, and never overflows after many failures', () => {
    const backoff = new Backoff({ baseMs: 10, capMs: 60_000, random: () => 0.5 });
    for (let i = 0; i < 2000; i++) backoff.next();
    expect(backoff.next()).toBe(45_000);
    backoff.reset();
    expect(backoff.failures).toBe(0);
    expect(backoff.next()).toBe(8);
  });
});
