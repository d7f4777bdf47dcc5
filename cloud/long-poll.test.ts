import { describe, expect, it } from 'vitest';
import { Cancellation } from './cancellation.js';
import { ParkedWaits, longPoll, type Parked } from './long-poll.js';
import { ManualTimers } from '../common/testing/manual-timers.js';

function setUp() {
  const timers = new ManualTimers();
  const gone = new Cancellation();
  const closing = new Cancellation();
  let parked: Parked<string> | undefined;
  let subscribed = 0;
  const poll = (waitMs = 1000) =>
    longPoll(
      { waitMs, otherwise: () => 'as it was', cancelledBy: [gone, closing], timers },
      (p) => {
        parked = p;
        subscribed++;
        return () => subscribed--;
      },
    );
  /** Nothing is left behind: no timer, no cancellation listener, no subscription. */
  const released = () =>
    timers.size === 0 && gone.waiting === 0 && closing.waiting === 0 && subscribed === 0;
  return {
    timers,
    gone,
    closing,
    poll,
    parked: () => parked!,
    subscribed: () => subscribed,
    released,
  };
}

describe('longPoll', () => {
  it('answers what the watcher settles, once, and lets go of everything', async () => {
    const t = setUp();
    const answer = t.poll();
    expect(t.subscribed()).toBe(1);
    expect(t.parked().settled).toBe(false);
    t.parked().settle('changed');
    t.parked().settle('changed again');
    t.timers.advance(5000);
    await expect(answer).resolves.toBe('changed');
    expect(t.parked().settled).toBe(true);
    expect(t.released()).toBe(true);
  });

  it('answers `otherwise` when the time runs out, not a moment before', async () => {
    const t = setUp();
    let answered: string | undefined;
    void t.poll(1000).then((value) => (answered = value));
    t.timers.advance(999);
    await Promise.resolve();
    expect(answered).toBeUndefined();
    t.timers.advance(1);
    await Promise.resolve();
    expect(answered).toBe('as it was');
    expect(t.released()).toBe(true);
  });

  it.each(['gone', 'closing'] as const)(
    'answers `otherwise` at once when %s is cancelled',
    async (which) => {
      const t = setUp();
      const answer = t.poll(60_000);
      t[which].cancel();
      await expect(answer).resolves.toBe('as it was');
      expect(t.released()).toBe(true);
    },
  );

  it('does not park at all for no wait, or for a client already gone', async () => {
    const t = setUp();
    await expect(t.poll(0)).resolves.toBe('as it was');
    t.gone.cancel();
    await expect(t.poll(1000)).resolves.toBe('as it was');
    expect(t.subscribed()).toBe(0);
    expect(t.timers.size).toBe(0);
  });

  it('fails with the watcher, and ignores a settle after', async () => {
    const t = setUp();
    const answer = t.poll();
    t.parked().fail(new Error('store unreachable'));
    t.parked().settle('too late');
    await expect(answer).rejects.toThrow('store unreachable');
    expect(t.released()).toBe(true);
  });

  it('unsubscribes a watcher that settles before it has answered how to', async () => {
    const timers = new ManualTimers();
    let subscribed = 0;
    const answer = longPoll(
      { waitMs: 1000, otherwise: () => 'as it was', cancelledBy: [], timers },
      (parked) => {
        subscribed++;
        parked.settle('at once');
        return () => subscribed--;
      },
    );
    await expect(answer).resolves.toBe('at once');
    expect(subscribed).toBe(0);
    expect(timers.size).toBe(0);
  });
});

describe('ParkedWaits', () => {
  const park = (waits: ParkedWaits, holder: string, timers: ManualTimers, answerWhenFull = false) =>
    longPoll(
      {
        waitMs: 1000,
        otherwise: () => 'as it was',
        cancelledBy: [],
        timers,
        parkedAs: { holder, waits, answerWhenFull },
      },
      () => () => undefined,
    );

  it("refuses a holder's wait beyond its cap with 429 and Retry-After, others still park", async () => {
    const timers = new ManualTimers();
    const waits = new ParkedWaits(2);
    const parked = [park(waits, 'a', timers), park(waits, 'a', timers)];
    await expect(park(waits, 'a', timers)).rejects.toMatchObject({
      code: 'TOO_MANY_REQUESTS',
      status: 429,
      headers: { 'Retry-After': '1' },
    });
    void park(waits, 'b', timers);
    expect(waits.count('a')).toBe(2);
    expect(waits.count('b')).toBe(1);
    timers.advance(1000);
    await Promise.all(parked);
    // Every way out lets go of the count.
    expect(waits.count('a')).toBe(0);
    expect(waits.count('b')).toBe(0);
  });

  it("caps all the holders of one account together: its terminals' credentials too", async () => {
    const timers = new ManualTimers();
    const waits = new ParkedWaits(2, 'this credential', 3);
    const parked = [
      park(waits, 'acct-1', timers),
      park(waits, 'acct-1/t-1', timers),
      park(waits, 'acct-1/t-2', timers),
    ];
    await expect(park(waits, 'acct-1/t-3', timers)).rejects.toMatchObject({
      code: 'TOO_MANY_REQUESTS',
      message: expect.stringContaining("this credential's account already has 3"),
    });
    // Another account is not held back by this one.
    void park(waits, 'acct-2/t-9', timers);
    expect(waits.count('acct-2/t-9')).toBe(1);
    timers.advance(1000);
    await Promise.all(parked);
    expect(waits.accountCount('acct-1/t-1')).toBe(0);
    expect(waits.accountCount('acct-2')).toBe(0);
  });

  it('answers at once, not 429, when asked to after a change the request made', async () => {
    const timers = new ManualTimers();
    const waits = new ParkedWaits(1);
    void park(waits, 'a', timers);
    await expect(park(waits, 'a', timers, true)).resolves.toBe('as it was');
    expect(waits.count('a')).toBe(1);
  });
});
