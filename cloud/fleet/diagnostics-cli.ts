/**
 * `tps fleet facts` and `tps fleet doctor|logs|trace --terminal ID`: what a field engineer
 * asks of terminals from afar (docs/fleet.md, "Fleet facts" and "Diagnostics").
 */
import { UsageError, integerOption, parseCommandLine } from '../../common/cli.js';
import { printable, printableJson } from '../../common/terminal-text.js';
import {
  DiagnosticsResponse,
  FleetFactsResponse,
  type DiagnosticKind,
} from '../../protocol/index.js';
import {
  accessOptions,
  actingHelp,
  actingAccount,
  actingOptions,
  callRelay,
} from '../relay-call.js';

export const FACTS_USAGE = `Usage: tps fleet facts [--terminal ID | --cohort cohort-NAME] [--json]

Lists, for each terminal of the account (or one, or a cohort's): its name and cohort,
agent version, reader model and firmware, configuration version in force, last update
outcome, and when it was last seen.

  --terminal ID           one terminal
  --cohort cohort-NAME    the terminals of a cohort
${actingHelp(26)}  --json                  print the relay's answer as JSON
  --base-url, --username, --password   the relay and the account credential
                                       (TPS_BASE_URL, TPS_ACCOUNT_USERNAME, TPS_ACCOUNT_PASSWORD)
  -h, --help              this text
`;

const ASKS: Record<DiagnosticKind, string> = {
  doctor: 'its checklist as the running agent sees it (clock, journal, broker, reader, …)',
  logs: 'its newest log lines (200 at most; secrets and card data redacted)',
  trace: 'the frames of its reader line during its last payment (card numbers masked)',
};

/** Each diagnostic command's own usage: `tps fleet doctor|logs|trace --help`. */
export function diagnosticsUsage(kind: DiagnosticKind): string {
  const lines = kind === 'logs';
  return `Usage: tps fleet ${kind} --terminal ID${lines ? ' [--lines N]' : ''} [--wait S] [--json]

Asks a connected terminal's agent, over its MQTT link, for ${ASKS[kind]}.

  --terminal ID  the terminal asked
${lines ? '  --lines N      how many of the newest lines (default 200)\n' : ''}  --wait S       how long to wait for the answer (default 10 s, at most 60)
${actingHelp(17)}  --json         print the relay's answer as JSON
  --base-url, --username, --password   as for 'tps fleet facts'
  -h, --help     this text
`;
}

export async function runFleetFacts(argv: string[]): Promise<void> {
  const { values } = parseCommandLine(
    {
      args: argv,
      options: {
        ...accessOptions,
        ...actingOptions,
        terminal: { type: 'string' },
        cohort: { type: 'string' },
      },
    },
    FACTS_USAGE,
  );
  if (values.help) return void process.stdout.write(FACTS_USAGE);
  const acting = actingAccount(values, FACTS_USAGE);
  const answer = FleetFactsResponse.parse(
    await callRelay(
      values,
      '/fleet/facts',
      {
        ...acting.named,
        ...(values.terminal !== undefined ? { terminal_id: values.terminal } : {}),
        ...(values.cohort !== undefined ? { cohort: values.cohort } : {}),
      },
      FACTS_USAGE,
      acting.env,
    ),
  );
  if (values.json) {
    process.stdout.write(`${printableJson(answer, 2)}\n`);
    return;
  }
  // What agents said of themselves is shown, never obeyed (common/terminal-text.ts).
  const shown = (value: string | null) => (value === null ? '?' : printable(value));
  for (const t of answer.terminals) {
    process.stdout.write(
      `${t.terminal_id}  ${printable(t.name ?? '')}${t.cohort ? ` (${printable(t.cohort)})` : ''}  ${t.connected ? 'connected' : 'offline'}, last seen ${shown(t.last_seen)}\n` +
        `  agent ${shown(t.agent_version)} on Node.js ${shown(t.node_version)}; reader ${shown(t.reader_protocol)} ${shown(t.reader_model)}, firmware ${shown(t.reader_firmware)}\n` +
        `  configuration ${shown(t.config_version)} ${printable(t.config_status ?? '')}; last update ${shown(t.last_update_outcome)}\n`,
    );
  }
}

export function diagnosticsCommand(kind: DiagnosticKind) {
  const usage = diagnosticsUsage(kind);
  return async (argv: string[]): Promise<void> => {
    const { values } = parseCommandLine(
      {
        args: argv,
        options: {
          ...accessOptions,
          ...actingOptions,
          terminal: { type: 'string' },
          lines: { type: 'string' },
          wait: { type: 'string' },
        },
      },
      usage,
    );
    if (values.help) return void process.stdout.write(usage);
    if (kind !== 'logs' && values.lines !== undefined) {
      throw new UsageError("--lines is for 'tps fleet logs'", usage);
    }
    if (values.terminal === undefined) {
      throw new UsageError('--terminal ID is needed', usage);
    }
    const lines =
      values.lines === undefined
        ? undefined
        : integerOption('--lines', values.lines, { min: 1, max: 200 }, usage);
    const wait =
      values.wait === undefined
        ? 10
        : integerOption('--wait', values.wait, { min: 1, max: 60 }, usage);
    const acting = actingAccount(values, usage);
    const answer = DiagnosticsResponse.parse(
      await callRelay(
        values,
        '/fleet/diagnostics',
        {
          ...acting.named,
          terminal_id: values.terminal,
          kind,
          ...(lines !== undefined ? { lines } : {}),
          wait_seconds: wait,
        },
        usage,
        acting.env,
      ),
    );
    if (values.json) {
      process.stdout.write(`${printableJson(answer, 2)}\n`);
      return;
    }
    process.stdout.write(render(answer));
  };
}

const MARK = { ok: '✓', warn: '!', fail: '✗' } as const;
const multiline = { multiline: true };

/** The agent's answer as text; what the agent wrote is shown, never obeyed (common/terminal-text.ts). */
function render(answer: DiagnosticsResponse): string {
  const out: string[] = [];
  for (const check of answer.doctor?.checks ?? []) {
    out.push(`${MARK[check.status]} ${printable(check.title)}`);
    if (check.detail)
      out.push(`    ${printable(check.detail, multiline).replaceAll('\n', '\n    ')}`);
  }
  if (answer.logs) {
    if (answer.logs.truncated) out.push('(older lines left out to fit one answer)');
    out.push(...answer.logs.lines.map((line) => printable(line, multiline)));
  }
  if (answer.trace) {
    const { trace } = answer;
    out.push(
      trace.transaction_id
        ? `Reader line during ${printable(trace.transaction_id)}${trace.truncated ? ' (the first frames left out)' : ''}:`
        : 'No payment since the agent started.',
    );
    for (const frame of trace.frames) {
      out.push(`${printable(frame.at)}  ${frame.direction}  ${printable(frame.text, multiline)}`);
    }
  }
  return `${out.join('\n')}\n`;
}
