/**
 * `tps fleet rollout start|status|pause|resume`: the operator rolls a published release
 * out to a cohort of a merchant account in waves and shows where it stands (docs/fleet.md,
 * "Rollouts").
 */
import { z } from 'zod';
import { ROLLOUTS_PATH, RolloutView } from '../../protocol/index.js';
import { UsageError, parseCommandLine } from '../../common/cli.js';
import { printable, printableJson } from '../../common/terminal-text.js';
import { OPERATOR_ENV, accessOptions, actingAccount, callRelay } from '../relay-call.js';

const ACCESS = `  --json                  print the answer as JSON
  -h, --help              this text
  --base-url URL          the relay's API (default http://127.0.0.1:8080/pos, or TPS_BASE_URL)
  --username, --password  the operator's credential (or TPS_OPERATOR_USERNAME and
                          TPS_OPERATOR_PASSWORD)
`;

const START_USAGE = `Usage: tps fleet rollout start --account-id ACCOUNT_ID --version V --cohort C [options]

Rolls release V (published with 'tps fleet release publish') out to the terminals of
cohort C of the merchant account ACCOUNT_ID in three waves: one terminal, then a share of
the cohort, then all the rest. Each wave must report its update installed and healthy
before the next is ordered; too many failures, or silence past the deadline, pause the
rollout. A newer rollout for the same cohort of the account supersedes this one.

  --account-id ACCOUNT_ID the merchant account whose cohort it reaches (acct-…)
  --version V             the release version
  --cohort C              the cohort (cohort-NAME, as chosen when its terminals were claimed)
  --arch A                the release's architecture that must be published (linux-x64, linux-arm64; default linux-x64)
  --share N               the second wave, in percent of the cohort (default 10)
  --max-failures N        after the first wave (where any failure pauses), the percent of a wave that may fail (default 10)
  --deadline S            seconds a wave's terminals have to report (default 900)
${ACCESS}`;

const STATUS_USAGE = `Usage: tps fleet rollout status [ID] [options]

Without ID, the rollouts of every account, newest first; with ID, that rollout: its
state, its wave, why it paused, and each ordered terminal's outcome with the agent's
reason.

  --account-id ACCOUNT_ID without ID: only the rollouts that reach this account
${ACCESS}`;

const changeUsage = (
  verb: 'pause' | 'resume',
  what: string,
) => `Usage: tps fleet rollout ${verb} ID [options]

${what}

${ACCESS}`;

const PAUSE_USAGE = changeUsage(
  'pause',
  'Pauses a running rollout: no further wave is ordered. Terminals already ordered go on\nwith their update.',
);
const RESUME_USAGE = changeUsage(
  'resume',
  'Resumes a paused rollout. Paused by its gate: the failed wave is accepted as it stands\nand the next one is ordered. Paused by an operator: the wave goes on, its terminals that\nhave not reported given a new deadline.',
);

export const ROLLOUT_USAGE = `Usage: tps fleet rollout <command> [options]

Commands:
  start --account-id A --version V --cohort C   roll a release out to a cohort in waves
  status [ID]                                the rollouts, or one with its terminals
  pause ID                                   order no further wave
  resume ID                                  go on with a paused rollout

Run 'tps fleet rollout <command> --help' for its options. Rollouts are the operator's:
each command signs in with its credential (TPS_OPERATOR_USERNAME, TPS_OPERATOR_PASSWORD).
`;

const USAGES: Record<string, string> = {
  start: START_USAGE,
  status: STATUS_USAGE,
  pause: PAUSE_USAGE,
  resume: RESUME_USAGE,
};

const percent = (name: string, text: string | undefined, usage: string) => {
  if (text === undefined) return undefined;
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < 0 || value > 100) {
    throw new UsageError(`--${name} must be a whole number of percent, 0-100`, usage);
  }
  return value;
};

export async function runRollout(argv: string[]): Promise<void> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h') {
    process.stdout.write(ROLLOUT_USAGE);
    return;
  }
  const usage = USAGES[name];
  if (!usage) throw new UsageError(`unknown command 'fleet rollout ${name}'`, ROLLOUT_USAGE);
  const { values, positionals } = parseCommandLine(
    {
      args: rest,
      options: {
        ...accessOptions,
        ...(name === 'start' || name === 'status' ? { 'account-id': { type: 'string' } } : {}),
        ...(name === 'start'
          ? {
              version: { type: 'string' },
              cohort: { type: 'string' },
              arch: { type: 'string' },
              share: { type: 'string' },
              'max-failures': { type: 'string' },
              deadline: { type: 'string' },
            }
          : {}),
      },
      allowPositionals: name !== 'start',
      strict: true,
    },
    usage,
  );
  if (values.help) return void process.stdout.write(usage);
  const option = (key: string) => (values as Record<string, string | boolean | undefined>)[key];
  // The account is named as every operator's command names it; the credential is always
  // the operator's (a rollout is its alone, with or without an account).
  const named = option('account-id');
  const account = actingAccount(
    { 'account-id': typeof named === 'string' ? named : undefined },
    usage,
  ).named.account_id;
  const call = (path: string, body: object | undefined) =>
    callRelay(values, path, body, usage, OPERATOR_ENV);
  if (name === 'start') {
    const version = option('version');
    const cohort = option('cohort');
    if (account === undefined) {
      throw new UsageError('--account-id ACCOUNT_ID is needed: whose cohort it reaches', usage);
    }
    if (typeof version !== 'string' || typeof cohort !== 'string') {
      throw new UsageError('--version and --cohort are needed', usage);
    }
    const deadline = option('deadline') as string | undefined;
    if (deadline !== undefined && !/^\d+$/.test(deadline)) {
      throw new UsageError('--deadline must be a whole number of seconds', usage);
    }
    const share = percent('share', option('share') as string | undefined, usage);
    const maxFailures = percent(
      'max-failures',
      option('max-failures') as string | undefined,
      usage,
    );
    const answer = await call(ROLLOUTS_PATH.replace(/^\/v1/, ''), {
      account_id: account,
      version,
      cohort,
      ...(typeof option('arch') === 'string' ? { arch: option('arch') } : {}),
      ...(share !== undefined ? { share_percent: share } : {}),
      ...(maxFailures !== undefined ? { max_failure_percent: maxFailures } : {}),
      ...(deadline !== undefined ? { deadline_s: Number(deadline) } : {}),
    });
    return show(RolloutAnswer.parse(answer).rollout, values.json === true);
  }
  const id = positionals[0];
  if (positionals.length > 1)
    throw new UsageError(`unexpected argument '${positionals[1]}'`, usage);
  const path = ROLLOUTS_PATH.replace(/^\/v1/, '');
  if (name === 'status' && id === undefined) {
    const filter = account === undefined ? '' : `?account_id=${encodeURIComponent(account)}`;
    const { rollouts } = RolloutList.parse(await call(`${path}${filter}`, undefined));
    if (values.json) return void process.stdout.write(`${printableJson(rollouts)}\n`);
    if (rollouts.length === 0) return void process.stdout.write('No rollouts.\n');
    for (const rollout of rollouts) process.stdout.write(`${summary(rollout)}\n`);
    return;
  }
  if (id === undefined) throw new UsageError('the rollout ID is needed', usage);
  if (account !== undefined) {
    throw new UsageError('--account-id filters the list of rollouts; not with an ID', usage);
  }
  const target = `${path}/${encodeURIComponent(id)}`;
  const answer =
    name === 'status' ? await call(target, undefined) : await call(`${target}/${name}`, {});
  show(RolloutAnswer.parse(answer).rollout, values.json === true);
}

const RolloutAnswer = z.object({ rollout: RolloutView });
const RolloutList = z.object({ rollouts: z.array(RolloutView) });

function summary(r: RolloutView): string {
  const installed = r.terminals.filter((t) => t.result === 'installed').length;
  return (
    `${r.id}  ${r.version} (${r.arch}) to ${printable(r.cohort)} of ${printable(r.account_id)}: ` +
    `${r.state}, wave ${r.wave} of 3, ` +
    `${installed} of ${r.terminals.length} ordered installed`
  );
}

function show(r: RolloutView, json: boolean): void {
  if (json) return void process.stdout.write(`${printableJson(r)}\n`);
  const lines = [summary(r)];
  // Outcomes and reasons come from agents: shown, never obeyed (common/terminal-text.ts).
  if (r.paused_reason) lines.push(`  paused: ${printable(r.paused_reason)}`);
  if (r.superseded_by) lines.push(`  superseded by ${printable(r.superseded_by)}`);
  for (const t of r.terminals) {
    const outcome = printable(t.result ?? 'under way');
    const reason = t.reason ? `: ${printable(t.reason)}` : '';
    lines.push(`  ${t.terminal_id}  wave ${t.wave}  ${outcome}${reason}`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}
