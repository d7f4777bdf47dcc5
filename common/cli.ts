/**
 * What every `tps` command shares: one exit-code convention, the usage error that carries
 * the usage of the command misused, and the option parser that turns `node:util`'s
 * complaints into such errors. bin/tps.ts is the one place that maps errors to exit codes.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

/** 0 done, 1 failed, 2 the command was given wrongly (nothing was attempted). */
export const EXIT = { done: 0, failed: 1, usage: 2 } as const;

/**
 * The command was given wrongly: an unknown option, a missing argument, a bad value, or a
 * setting a flag stands for (its environment variable) missing or wrong. Nothing was
 * attempted. bin/tps.ts prints the message and `usage` on stderr and exits 2.
 */
export class UsageError extends Error {
  override readonly name: string = 'UsageError';
  constructor(
    message: string,
    /** The usage text of the command misused (printed after the message). */
    readonly usage?: string,
  ) {
    super(message);
  }
}

export const isUsageError = (error: unknown): error is UsageError => error instanceof UsageError;

/** Whether `node:util` parseArgs refused the arguments (its errors carry these codes). */
function isParseArgsError(error: unknown): error is Error {
  const code = (error as { code?: unknown } | null)?.code;
  return error instanceof Error && typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_');
}

/**
 * `node:util` parseArgs (strict unless told otherwise), whose refusals (an unknown option,
 * a missing value, a value for a boolean, an unexpected argument) are UsageErrors carrying
 * `usage`.
 */
export function parseCommandLine<T extends ParseArgsConfig>(
  config: T,
  usage: string,
): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    // Node adds advice on `--` to every unknown option, which only confuses here.
    if (isParseArgsError(error)) {
      throw new UsageError(
        error.message.replace(/\. To specify a positional argument.*$/s, ''),
        usage,
      );
    }
    throw error;
  }
}

/** A whole-number option, checked; undefined when not given. */
export function integerOption(
  flag: string,
  text: string | undefined,
  range: { min: number; max?: number },
  usage?: string,
): number | undefined {
  if (text === undefined) return undefined;
  const { min, max = Number.MAX_SAFE_INTEGER } = range;
  const value = Number(text);
  if (text.trim() === '' || !Number.isInteger(value) || value < min || value > max) {
    throw new UsageError(
      `${flag} must be a whole number from ${min}${max < Number.MAX_SAFE_INTEGER ? ` to ${max}` : ''}, not '${text}'`,
      usage,
    );
  }
  return value;
}

/** Runs a command; a UsageError it throws without a usage text gets `usage`. */
export function withUsage<A extends unknown[]>(
  usage: string,
  run: (...args: A) => Promise<void>,
): (...args: A) => Promise<void> {
  return async (...args) => {
    try {
      await run(...args);
    } catch (error) {
      if (error instanceof UsageError && error.usage === undefined) {
        throw new UsageError(error.message, usage);
      }
      throw error;
    }
  };
}
