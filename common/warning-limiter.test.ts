import { describe, expect, it } from 'vitest';
import { WarningLimiter } from './warning-limiter.js';

function setUp() {
  const said: Array<{ fields: Record<string, unknown>; message: string }> = [];
  let now = 0;
  const limiter = new WarningLimiter(
    {
      warn: ((fields: Record<string, unknown>, message: string) =>
        said.push({ fields, message })) as never,
    },
    10_000,
    () => now,
  );
  return { said, limiter, advance: (ms: number) => (now += ms) };
}

describe('WarningLimiter', () => {
  it('says the first warning of a kind, then at most one every 10 s with the count left unsaid', () => {
    const t = setUp();
    t.limiter.warn('gap', { seq: 1 }, 'dropped');
    for (let seq = 2; seq <= 500; seq++) t.limiter.warn('gap', { seq }, 'dropped');
    expect(t.said).toEqual([{ fields: { seq: 1, unsaid: 0 }, message: 'dropped' }]);
    t.advance(9_999);
    t.limiter.warn('gap', { seq: 501 }, 'dropped');
    expect(t.said).toHaveLength(1);
    t.advance(1);
    t.limiter.warn('gap', { seq: 502 }, 'dropped');
    expect(t.said[1]).toEqual({ fields: { seq: 502, unsaid: 500 }, message: 'dropped' });
  });

  it('counts each kind on its own', () => {
    const t = setUp();
    t.limiter.warn('a', {}, 'one');
    t.limiter.warn('b', {}, 'two');
    t.limiter.warn('a', {}, 'one');
    expect(t.said.map((s) => s.message)).toEqual(['one', 'two']);
  });
});
