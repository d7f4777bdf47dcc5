import { describe, expect, it } from 'vitest';
import { sleep } from '../clock.js';
import { ManualTimers } from './manual-timers.js';

describe('ManualTimers', () => {
  it('runs the earliest timer first, ties in the order set, and moves its clock to it', () => {
    const timers = new ManualTimers(new Date('2026-03-01T12:00:00.000Z'));
    const ran: string[] = [];
    timers.setTimeout(() => ran.push('b'), 200);
    timers.setTimeout(() => ran.push('a'), 100);
    timers.setTimeout(() => ran.push('b2'), 200);
    const cleared = timers.setTimeout(() => ran.push('never'), 50);
    timers.clearTimeout(cleared);
    expect(timers.size).toBe(3);
    expect(timers.fireNext()).toBe(true);
    expect(timers.clock.now().toISOString()).toBe('2026-03-01T12:00:00.100Z');
    expect(timers.fireNext()).toBe(true);
    expect(timers.fireNext()).toBe(true);
    expect(timers.fireNext()).toBe(false);
    expect(ran).toEqual(['a', 'b', 'b2']);
    expect(timers.now).toBe(Date.parse('2026-03-01T12:00:00.200Z'));
  });

  it('advances through every timer due, those set on the way included, and no further', () => {
    const timers = new ManualTimers();
    const ran: number[] = [];
    const tick = () => {
      ran.push(timers.now);
      timers.setTimeout(tick, 1_000);
    };
    timers.setTimeout(tick, 1_000);
    expect(timers.advance(3_500)).toBe(3);
    expect(ran).toEqual([1_000, 2_000, 3_000]);
    expect(timers.now).toBe(3_500);
    expect(timers.size).toBe(1);
    expect(timers.advance(499)).toBe(0);
    expect(timers.advance(1)).toBe(1);
  });

  it('drives sleep: resolves when its timer fires, or at once when aborted', async () => {
    const timers = new ManualTimers();
    let woke = false;
    const slept = sleep(5_000, undefined, timers).then(() => (woke = true));
    await Promise.resolve();
    expect(woke).toBe(false);
    timers.advance(5_000);
    await slept;
    expect(woke).toBe(true);

    const abort = new AbortController();
    const cut = sleep(5_000, abort.signal, timers);
    expect(timers.size).toBe(1);
    abort.abort();
    await cut;
    expect(timers.size).toBe(0);
  });
});
