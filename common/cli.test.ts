import { describe, expect, it } from 'vitest';
import { UsageError, integerOption, parseCommandLine, withUsage } from './cli.js';

const USAGE = 'Usage: tps thing [--count N] [--json]\n';
const options = { count: { type: 'string' }, json: { type: 'boolean' } } as const;

function refusal(run: () => unknown): UsageError {
  try {
    run();
  } catch (error) {
    if (error instanceof UsageError) return error;
    throw error;
  }
  throw new Error('not refused');
}

describe('parseCommandLine', () => {
  it('parses what it is given', () => {
    expect(parseCommandLine({ args: ['--count', '3', '--json'], options }, USAGE).values).toEqual({
      count: '3',
      json: true,
    });
  });

  it('turns every refusal of parseArgs into a UsageError carrying the usage', () => {
    const cases: Array<[string[], RegExp]> = [
      [['--frob'], /^Unknown option '--frob'$/],
      [['--count'], /argument missing/],
      [['--json=yes'], /does not take an argument/],
      [['stray'], /Unexpected argument 'stray'/],
    ];
    for (const [args, message] of cases) {
      const error = refusal(() => parseCommandLine({ args, options }, USAGE));
      expect(error.message).toMatch(message);
      expect(error.usage).toBe(USAGE);
    }
  });
});

describe('integerOption', () => {
  it('takes whole numbers in range, refuses anything else naming the flag', () => {
    expect(integerOption('--count', undefined, { min: 1 })).toBeUndefined();
    expect(integerOption('--count', '7', { min: 1, max: 9 })).toBe(7);
    for (const text of ['0', '10', '1.5', 'x', '', ' ']) {
      const error = refusal(() => integerOption('--count', text, { min: 1, max: 9 }, USAGE));
      expect(error.message).toBe(`--count must be a whole number from 1 to 9, not '${text}'`);
      expect(error.usage).toBe(USAGE);
    }
  });
});

describe('withUsage', () => {
  it('gives a UsageError without a usage the command’s, and leaves other errors alone', async () => {
    const refused = withUsage(USAGE, async () => {
      throw new UsageError('--count must be a whole number');
    });
    await expect(refused()).rejects.toMatchObject({ usage: USAGE });
    const failed = withUsage(USAGE, async () => {
      throw new Error('the port closed');
    });
    await expect(failed()).rejects.not.toBeInstanceOf(UsageError);
  });
});
