import { describe, expect, it } from 'vitest';
import { TerminalLocks } from './terminal-locks.js';

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('terminal locks', () => {
  it('gives the turn to one caller per terminal, first come first served', async () => {
    const locks = new TerminalLocks();
    const order: string[] = [];
    const never = new AbortController().signal;
    const run = async (name: string, terminal: string) => {
      const release = await locks.acquire(terminal, never);
      order.push(`${name} in`);
      await tick();
      order.push(`${name} out`);
      release();
    };
    await Promise.all([run('a', 't-1'), run('b', 't-1'), run('c', 't-2')]);
    expect(order.indexOf('a out')).toBeLessThan(order.indexOf('b in'));
    expect(order.indexOf('c in')).toBeLessThan(order.indexOf('a out'));
  });

  it('lets a waiter give up, and passes its turn on', async () => {
    const locks = new TerminalLocks();
    const release = await locks.acquire('t-1', new AbortController().signal);
    const giveUp = new AbortController();
    const waiting = locks.acquire('t-1', giveUp.signal);
    const third = locks.acquire('t-1', new AbortController().signal);
    giveUp.abort(new Error('no more'));
    await expect(waiting).rejects.toThrow('no more');
    release();
    const releaseThird = await third;
    releaseThird();
  });
});
