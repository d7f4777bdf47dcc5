import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, describe, expect, it } from 'vitest';
import { withDeadline } from './deadline.js';

describe('withDeadline', () => {
  // A peer in another process, which answers while this one is busy.
  const echo = spawn('cat', [], { stdio: ['pipe', 'pipe', 'inherit'] });
  afterAll(() => void echo.kill());

  it('answers what came in time, and says there was no answer when none came', async () => {
    await expect(withDeadline(Promise.resolve('status'), 50)).resolves.toBe('status');
    await expect(withDeadline(new Promise(() => {}), 20)).rejects.toThrow('no answer within 20 ms');
    await expect(withDeadline(new Promise(() => {}), 20, 'the reader is silent')).rejects.toThrow(
      'the reader is silent',
    );
  });

  it('takes an answer that came in time though this process stalled past the deadline', async () => {
    const DEADLINE_MS = 100;
    // Started and answering before the first stall.
    const ready = once(echo.stdout!, 'data');
    echo.stdin!.write('ready\n');
    await ready;
    for (let i = 0; i < 3; i++) {
      const answer = once(echo.stdout!, 'data').then(([chunk]) => String(chunk));
      const awaited = withDeadline(answer, DEADLINE_MS);
      echo.stdin!.write(`ping ${i}\n`);
      // The answer arrives meanwhile; the loop reads it only after the stall, with the timer due.
      const stallEnd = Date.now() + 3 * DEADLINE_MS;
      while (Date.now() < stallEnd);
      await expect(awaited).resolves.toBe(`ping ${i}\n`);
    }
  });
});
