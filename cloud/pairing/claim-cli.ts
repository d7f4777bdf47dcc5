/** `tps terminal claim CODE`: pairs the terminal showing CODE into the account. */
import { UsageError, parseCommandLine } from '../../common/cli.js';
import { TerminalClaimResponse } from '../../protocol/index.js';
import {
  accessOptions,
  actingHelp,
  actingAccount,
  actingOptions,
  callRelay,
} from '../relay-call.js';

export const CLAIM_USAGE = `Usage: tps terminal claim CODE [--name NAME] [--cohort cohort-NAME] [options]

Claims the pairing code a new terminal shows ('tps agent pair' prints it): the terminal
joins the account with the name and cohort given and its agent receives its credential.
Prints the terminal id and its POS API credential (shown this once). A code is claimed
once, within 10 minutes of being shown.

  --name NAME             the terminal's name (default: its id)
  --cohort cohort-NAME    the group it belongs to (lowercase letters, digits, hyphens)
  --printer               the terminal has a receipt printer
  --battery               the terminal runs on a battery
${actingHelp(26)}  --json                  print {terminal_id, name, cohort, username, password} as JSON
  --base-url, --username, --password   as for 'tps simulator create'
  -h, --help              this text
`;

export async function runTerminalClaim(argv: string[]): Promise<void> {
  const { values, positionals } = parseCommandLine(
    {
      args: argv,
      options: {
        ...accessOptions,
        ...actingOptions,
        name: { type: 'string' },
        cohort: { type: 'string' },
        printer: { type: 'boolean' },
        battery: { type: 'boolean' },
      },
      allowPositionals: true,
    },
    CLAIM_USAGE,
  );
  if (values.help) return void process.stdout.write(CLAIM_USAGE);
  if (positionals.length !== 1) {
    throw new UsageError(
      positionals.length === 0 ? 'the pairing CODE is needed' : 'give one CODE',
      CLAIM_USAGE,
    );
  }
  const acting = actingAccount(values, CLAIM_USAGE);
  const claimed = TerminalClaimResponse.parse(
    await callRelay(
      values,
      '/terminal/claim',
      {
        ...acting.named,
        code: positionals[0],
        ...(values.name ? { name: values.name } : {}),
        ...(values.cohort ? { cohort: values.cohort } : {}),
        ...(values.printer ? { printer: true } : {}),
        ...(values.battery ? { battery: true } : {}),
      },
      CLAIM_USAGE,
      acting.env,
    ),
  );
  if (values.json) {
    process.stdout.write(`${JSON.stringify(claimed)}\n`);
    return;
  }
  process.stdout.write(
    `Terminal ${claimed.terminal_id} ("${claimed.name}"${claimed.cohort ? `, ${claimed.cohort}` : ''}) paired; its agent is receiving its credential.\n` +
      `POS credential (shown this once):\n  username ${claimed.username}\n  password ${claimed.password}\n`,
  );
}
