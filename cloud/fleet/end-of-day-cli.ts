/**
 * `tps fleet end-of-day TERMINAL | --cohort cohort-NAME`: close a terminal's day now
 * (docs/fleet.md, "End-of-day"; the API's `POST /fleet/end-of-day`).
 */
import { UsageError, parseCommandLine } from '../../common/cli.js';
import { FleetEndOfDayResponse } from '../../protocol/index.js';
import {
  accessOptions,
  actingHelp,
  actingAccount,
  actingOptions,
  callRelay,
} from '../relay-call.js';

export const END_OF_DAY_USAGE = `Usage: tps fleet end-of-day TERMINAL | --cohort cohort-NAME [--json]

Has the terminal (or each terminal of the cohort) close its day: a ZVT terminal submits
the day's payments to the acquirer (end-of-day, 06 50). The agent runs it as soon as no
payment runs; its totals arrive as a TerminalSettlement event (tps pos events, webhooks,
the console's terminal page). A terminal offline now runs it when it is back.

  TERMINAL                the terminal's id
  --cohort cohort-NAME    every terminal of a cohort
${actingHelp(26)}  --json                  print the relay's answer as JSON
  --base-url, --username, --password   as for 'tps fleet facts'
  -h, --help              this text
`;

export async function runFleetEndOfDay(argv: string[]): Promise<void> {
  const { values, positionals } = parseCommandLine(
    {
      args: argv,
      options: { ...accessOptions, ...actingOptions, cohort: { type: 'string' } },
      allowPositionals: true,
    },
    END_OF_DAY_USAGE,
  );
  if (values.help) return void process.stdout.write(END_OF_DAY_USAGE);
  const [terminal, ...extra] = positionals;
  if (extra.length > 0 || (terminal === undefined) === (values.cohort === undefined)) {
    throw new UsageError('name one TERMINAL or one --cohort', END_OF_DAY_USAGE);
  }
  const acting = actingAccount(values, END_OF_DAY_USAGE);
  const answer = FleetEndOfDayResponse.parse(
    await callRelay(
      values,
      '/fleet/end-of-day',
      {
        ...acting.named,
        ...(terminal !== undefined ? { terminal_id: terminal } : { cohort: values.cohort }),
      },
      END_OF_DAY_USAGE,
      acting.env,
    ),
  );
  if (values.json) {
    process.stdout.write(`${JSON.stringify(answer, null, 2)}\n`);
    return;
  }
  if (answer.terminal_ids.length === 0) {
    process.stdout.write('no terminal in that cohort\n');
    return;
  }
  for (const id of answer.terminal_ids) process.stdout.write(`${id}  end-of-day queued\n`);
}
