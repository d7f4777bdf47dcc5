/**
 * `tps pos …`: a POS on the command line, for developers. Payments go through PosClient
 * with a journal, so a purchase interrupted by Ctrl-C, a crash or a lost network is
 * finished by the next `tps pos` on the same journal.
 */
import { parseArgs } from 'node:util';
import { UsageError, parseCommandLine } from '../common/cli.js';
import { plain } from './cli-commands.js';
import { OPTIONS, checked, connection, output, type Values } from './cli-options.js';
import { POS_COMMAND_USAGE, POS_USAGE } from './cli-usage.js';
import { payment, paymentFlags, recover } from './cli-payments.js';
import { isTpsError } from './errors.js';

const KNOWN = new Set(Object.keys(POS_COMMAND_USAGE));

export async function runPos(argv: string[]): Promise<void> {
  // The command's own usage, for the errors of a strict parse: a lenient one finds it.
  const [named] = parseArgs({
    args: argv,
    options: OPTIONS,
    allowPositionals: true,
    strict: false,
  }).positionals;
  const usage = (named !== undefined && POS_COMMAND_USAGE[named]) || POS_USAGE;
  const { values, positionals } = parseCommandLine(
    { args: argv, options: OPTIONS, allowPositionals: true },
    usage,
  );
  const [command, ...rest] = positionals;
  if (values.help) return void process.stdout.write(usage);
  if (command === undefined) throw new UsageError('a command is needed', POS_USAGE);
  if (!KNOWN.has(command)) throw new UsageError(`unknown command '${command}'`, POS_USAGE);
  try {
    process.exitCode = await dispatch(command, rest, values);
  } catch (error) {
    if (error instanceof UsageError) throw new UsageError(error.message, usage);
    if (!isTpsError(error)) throw error;
    const retry = error.retryable ? ' (a failure that may pass: try again)' : '';
    throw new Error(`${error.message}${retry}`, { cause: error });
  }
}

async function dispatch(command: string, rest: string[], values: Values): Promise<number> {
  const out = output(values.json === true);
  switch (command) {
    case 'purchase':
    case 'refund':
      return payment(
        command,
        ...checked(
          () => connection(values),
          () => paymentFlags(values),
        ),
        values,
        out,
      );
    case 'recover':
      return recover(connection(values), values, out);
    case 'confirm':
    case 'get':
    case 'unconfirmed':
    case 'status':
    case 'print':
    case 'events':
    case 'local-trust':
      return plain(command, rest, connection(values), values, out);
    default:
      throw new UsageError(`unknown command '${command}'`, POS_USAGE);
  }
}
