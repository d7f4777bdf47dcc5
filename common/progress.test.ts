import { describe, expect, it } from 'vitest';
import { progressReporter, progressText } from './progress.js';

describe('progress', () => {
  it('says what is done, the share and the time left from the rate so far', () => {
    expect(progressText(0, 1000, 0, 'bytes')).toBe('0 of 1,000 bytes (0 %)');
    expect(progressText(250, 1000, 10_000, 'bytes')).toBe(
      '250 of 1,000 bytes (25 %), about 30 s left',
    );
    expect(progressText(100, 10_000, 2_000, 'bytes')).toBe(
      '100 of 10,000 bytes (1 %), about 3 min 18 s left',
    );
    expect(progressText(1000, 1000, 61_000, 'bytes')).toBe(
      '1,000 of 1,000 bytes (100 %), done in 1 min 01 s',
    );
  });

  it('on a terminal rewrites one line at most once a second, and always shows the end', () => {
    let now = 0;
    const written: string[] = [];
    const progress = progressReporter({
      write: (text) => written.push(text),
      tty: true,
      label: 'job',
      unit: 'bytes',
      now: () => now,
    });
    for (let done = 100; done <= 1000; done += 100) {
      now += 300;
      progress.update(done, 1000);
    }
    progress.end();
    expect(written).toEqual([
      '\rjob: 100 of 1,000 bytes (10 %)\x1b[K',
      '\rjob: 500 of 1,000 bytes (50 %), about 2 s left\x1b[K',
      '\rjob: 900 of 1,000 bytes (90 %), about 1 s left\x1b[K',
      '\rjob: 1,000 of 1,000 bytes (100 %), done in 3 s\x1b[K',
      '\n',
    ]);
  });
});
