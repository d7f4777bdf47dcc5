import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../../common/testing/manual-timers.js';
import { ConnectWatch, type ConnectOutcome } from './connect-watch.js';

function watch(stormAttempts = 5) {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino(
    { level: 'info' },
    { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  const counted: ConnectOutcome[] = [];
  const timers = new ManualTimers();
  const connects = new ConnectWatch({
    logger,
    timers,
    connected: () => 42,
    onConnect: (outcome) => counted.push(outcome),
    windowMs: 10_000,
    stormAttempts,
  });
  return { connects, lines, counted, timers };
}

describe('ConnectWatch', () => {
  it('counts every attempt, and warns once at the end of a window with a storm in it', () => {
    const { connects, lines, counted, timers } = watch();
    for (let i = 0; i < 6; i++) connects.record('accepted');
    connects.record('timed_out');
    expect(counted).toEqual([...Array<string>(6).fill('accepted'), 'timed_out']);
    expect(lines).toEqual([]);
    timers.advance(10_000);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 40,
      accepted: 6,
      timed_out: 1,
      refused: 0,
      over_limit: 0,
      agentsConnected: 42,
      msg: 'agents (re)connecting in a storm: 7 attempts in 10 s, 6 accepted, 1 cut off',
    });
    // The next window starts with its first attempt; a quiet one says nothing.
    connects.record('accepted');
    timers.advance(10_000);
    expect(lines).toHaveLength(1);
  });

  it('warns of a single attempt cut off for lack of time or room', () => {
    const { connects, lines, timers } = watch(1000);
    connects.record('over_limit');
    timers.advance(10_000);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ over_limit: 1 });
  });

  it('says nothing of a few refusals: a wrong credential is logged where it is refused', () => {
    const { connects, lines, timers } = watch();
    connects.record('refused');
    connects.record('refused');
    timers.advance(10_000);
    expect(lines).toEqual([]);
  });
});
