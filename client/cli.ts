/**
 * `tps pos …`: a POS on the command line, for developers. Payments go through PosClient
 * with a journal, so a purchase interrupted by Ctrl-C, a crash or a lost network is
 * finished by the next `tps pos` on the same journal.
 */
import { parseArgs } from 'node:util';
import { plain } from './cli-commands.js';
import {
  DEFAULT_BASE_URL,
  DEFAULT_JOURNAL,
  OPTIONS,
  UsageError,
  checked,
  connection,
  output,
  type Values,
} from './cli-options.js';
import { payment, paymentFlags, recover } from './cli-payments.js';
import { isTpsError } from './errors.js';

export const POS_USAGE = `Usage: tps pos <command> [options]

Commands:
  purchase --amount N --currency CUR [--external-id ID] [--cashback N]
  refund   --amount N --currency CUR [--external-id ID] [--original ID]
           [--original-terminal ID] [--customer-not-present]
  confirm  --external-id ID [--result-code CODE] [--description TEXT] [--captured-amount N]
  get      --external-id ID [--extra-amounts]
  unconfirmed
  status
  print FILE.png
  events   [--follow] [--type Transaction|TerminalStatus] [--limit N]
  recover  [--adopt] [--abort-unknown]   finish what an earlier run left in the journal

Amounts are integers in minor units (1000 is EUR 10.00). purchase and refund show the
terminal's screen while it works, then the result and the receipt, and confirm it.

Options (a flag wins over its environment variable):
  --base-url URL   TPS_BASE_URL     the relay, without the version (default ${DEFAULT_BASE_URL})
  --username U     TPS_USERNAME     API username (a terminal's or the account's)
  --password P     TPS_PASSWORD     API password
  --terminal ID    TPS_TERMINAL_ID  the terminal
  --journal FILE   TPS_JOURNAL      payment journal (default ${DEFAULT_JOURNAL})
  --revision v0|v1                  API revision (default v1)
  --json                            print JSON (purchase/refund: the final transaction)

Exit status: 0 done (the payment succeeded), 1 error, 2 usage or configuration,
3 payment not successful (declined, refused, conflict), 130 aborted with Ctrl-C.
`;

export async function runPos(argv: string[]): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    process.stderr.write(
      `tps pos: ${(error as Error).message}\nRun 'tps pos --help' for the commands and options.\n`,
    );
    process.exitCode = 2;
    return;
  }
  const { values, positionals } = parsed;
  const [command, ...rest] = positionals;
  if (values.help || command === undefined) {
    process.stdout.write(POS_USAGE);
    process.exitCode = values.help ? 0 : 2;
    return;
  }
  try {
    process.exitCode = await dispatch(command, rest, values);
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`tps pos ${command}:\n${indent(error.message)}\n`);
      process.exitCode = 2;
      return;
    }
    const message = isTpsError(error)
      ? `${error.message}${error.retryable ? ' (a failure that may pass: try again)' : ''}`
      : error instanceof Error
        ? error.message
        : String(error);
    process.stderr.write(`tps pos ${command}: ${message}\n`);
    process.exitCode = 1;
  }
}

const indent = (text: string) =>
  text
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n');

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
      return plain(command, rest, connection(values), values, out);
    default:
      throw new UsageError(`unknown command '${command}'; see tps pos --help`);
  }
}
