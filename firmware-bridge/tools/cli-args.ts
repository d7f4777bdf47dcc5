/** What the `tps bridge` subcommands share: number options and running until Ctrl-C. */
import { UsageError, integerOption } from '../../common/cli.js';

/** A whole-number option, checked; undefined when not given. */
export function integer(
  flag: string,
  text: string | undefined,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number | undefined {
  return integerOption(flag, text, { min, max });
}

/** Resolves on Ctrl-C or SIGTERM. */
export function untilStopped(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

/**
 * Takes `--protocol NAME` (or `--protocol=NAME`) out of the arguments, so that each
 * protocol's command parses only its own options. Default `native`.
 */
export function takeProtocol(argv: string[]): { protocol: 'native' | 'zvt'; rest: string[] } {
  const rest: string[] = [];
  let protocol: string | undefined;
  for (let index = 0; index < argv.length; index++) {
    const arg = argv[index] as string;
    if (arg === '--') {
      rest.push(...argv.slice(index));
      break;
    }
    if (arg === '--protocol') {
      protocol = argv[++index];
      if (protocol === undefined) throw new UsageError('--protocol needs a value: native or zvt');
    } else if (arg.startsWith('--protocol=')) {
      protocol = arg.slice('--protocol='.length);
    } else {
      rest.push(arg);
    }
  }
  if (protocol !== undefined && protocol !== 'native' && protocol !== 'zvt') {
    throw new UsageError(`--protocol is native or zvt, not '${protocol}'`);
  }
  return { protocol: protocol ?? 'native', rest };
}
