import { describe, expect, it } from 'vitest';
import { AttemptLimit, type TakenAttempt } from './attempt-limit.js';

function limitOf(limit: number, windowMs: number) {
  let now = 1_000_000;
  return {
    attempts: new AttemptLimit(limit, windowMs, () => now),
    advance: (ms: number) => (now += ms),
  };
}

const takenOrRefused = (attempt: TakenAttempt | { retryAfterS: number }) =>
  'retryAfterS' in attempt ? attempt.retryAfterS : 'taken';

describe('AttemptLimit', () => {
  it('takes attempts up to the limit at once, before any has finished', () => {
    const { attempts } = limitOf(3, 60_000);
    const outcomes = Array.from({ length: 5 }, () => takenOrRefused(attempts.take('k')));
    expect(outcomes).toEqual(['taken', 'taken', 'taken', 60, 60]);
    expect(takenOrRefused(attempts.take('other'))).toBe('taken');
  });

  it('an attempt given back frees its place, once', () => {
    const { attempts } = limitOf(2, 60_000);
    const first = attempts.take('k') as TakenAttempt;
    attempts.take('k');
    expect(attempts.check('k')).toBe(60);
    first.giveBack();
    first.giveBack();
    expect(attempts.check('k')).toBeUndefined();
    expect(takenOrRefused(attempts.take('k'))).toBe('taken');
    expect(takenOrRefused(attempts.take('k'))).toBe(60);
  });

  it('a full window ends; an attempt of the old window given back leaves the new one alone', () => {
    const { attempts, advance } = limitOf(1, 60_000);
    const old = attempts.take('k') as TakenAttempt;
    advance(45_000);
    expect(attempts.check('k')).toBe(15);
    advance(15_000);
    expect(takenOrRefused(attempts.take('k'))).toBe('taken');
    old.giveBack();
    expect(attempts.check('k')).toBe(60);
  });
});
