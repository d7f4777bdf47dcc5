import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../../common/testing/manual-timers.js';
import { EventRetention } from './retention.js';

const START = Date.parse('2026-03-01T12:00:00.000Z');
const DAY = 86_400_000;
const HOUR = 3_600_000;

/** Lets the sweep's promise chain (oldestNeeded, trimEvents, the log) run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

function retention(trimEvents: (olderThan: string, keepFrom: number) => Promise<number>) {
  const timers = new ManualTimers(START);
  const logged: string[] = [];
  const logger = pino({ level: 'error' }, { write: (line: string) => void logged.push(line) });
  const sweeper = new EventRetention(
    { trimEvents },
    timers.clock,
    7 * DAY,
    async () => 42,
    logger,
    timers,
  );
  return { timers, logged, sweeper };
}

describe('event retention', () => {
  it('sweeps at start and then every interval, on the clock it is given', async () => {
    const sweeps: Array<[string, number]> = [];
    const { timers, sweeper } = retention(async (olderThan, keepFrom) => {
      sweeps.push([olderThan, keepFrom]);
      return 0;
    });
    sweeper.start(HOUR);
    await settle();
    expect(sweeps).toEqual([[new Date(START - 7 * DAY).toISOString(), 42]]);
    timers.advance(HOUR - 1);
    await settle();
    expect(sweeps).toHaveLength(1);
    timers.advance(1 + 2 * HOUR);
    await settle();
    expect(sweeps.map(([olderThan]) => olderThan)).toEqual([
      new Date(START - 7 * DAY).toISOString(),
      new Date(START + HOUR - 7 * DAY).toISOString(),
      new Date(START + 2 * HOUR - 7 * DAY).toISOString(),
      new Date(START + 3 * HOUR - 7 * DAY).toISOString(),
    ]);
    sweeper.stop();
    expect(timers.size).toBe(0);
    timers.advance(10 * HOUR);
    await settle();
    expect(sweeps).toHaveLength(4);
  });

  it('logs a failed sweep and sweeps again at the next interval', async () => {
    let calls = 0;
    const { timers, logged, sweeper } = retention(async () => {
      calls++;
      if (calls === 1) throw new Error('database gone');
      return 7;
    });
    sweeper.start(HOUR);
    await settle();
    expect(logged).toHaveLength(1);
    expect(logged[0]).toContain('event retention failed');
    expect(logged[0]).toContain('database gone');
    timers.advance(HOUR);
    await settle();
    expect(calls).toBe(2);
    expect(logged).toHaveLength(1);
    sweeper.stop();
  });
});
