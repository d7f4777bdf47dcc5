/**
 * Every `tps` command and subcommand, with the docs page that documents it: the list the
 * tests of the command line walk (test/cli-help-docs.test.ts, test/cli-exit-codes.test.ts).
 * A new command group joins by adding its commands here.
 */
import { spawnTps } from './relay-process.js';

export interface CliCommand {
  /** What follows `tps` to name the command, e.g. ['pos', 'purchase']. */
  argv: string[];
  /** The page that documents it, from the repository root. */
  page: string;
}

const pos = (command: string): CliCommand => ({ argv: ['pos', command], page: 'docs/client.md' });
const zvt = (command: string): CliCommand => ({
  argv: ['bridge', command, '--protocol', 'zvt'],
  page: 'docs/zvt.md',
});

export const CLI_COMMANDS: CliCommand[] = [
  { argv: ['cloud'], page: 'docs/configuration.md' },
  { argv: ['simulator', 'create'], page: 'docs/cli.md' },
  { argv: ['terminal', 'create'], page: 'docs/cli.md' },
  { argv: ['terminal', 'claim'], page: 'docs/cli.md' },
  { argv: ['credential', 'revoke'], page: 'docs/cli.md' },
  { argv: ['account', 'list'], page: 'docs/tenants.md' },
  { argv: ['broker', 'mosquitto'], page: 'docs/broker.md' },
  ...[
    'purchase',
    'refund',
    'confirm',
    'get',
    'unconfirmed',
    'status',
    'print',
    'events',
    'recover',
  ].map(pos),
  { argv: ['agent'], page: 'docs/agent.md' },
  { argv: ['agent', 'doctor'], page: 'docs/agent.md' },
  { argv: ['agent', 'pair'], page: 'docs/fleet.md' },
  ...[
    ['config', 'get'],
    ['config', 'set'],
    ['config', 'merchant-settings'],
    ['facts'],
    ['doctor'],
    ['logs'],
    ['trace'],
  ].map((words) => ({ argv: ['fleet', ...words], page: 'docs/fleet.md' })),
  { argv: ['fleet', 'release', 'publish'], page: 'docs/fleet.md' },
  ...['start', 'status', 'pause', 'resume'].map((command) => ({
    argv: ['fleet', 'rollout', command],
    page: 'docs/fleet.md',
  })),
  { argv: ['bridge', 'emulate'], page: 'docs/bench-tools.md' },
  { argv: ['bridge', 'monitor'], page: 'docs/bench-tools.md' },
  { argv: ['bridge', 'probe'], page: 'docs/bench-tools.md' },
  { argv: ['bridge', 'print'], page: 'docs/printer.md' },
  zvt('emulate'),
  zvt('monitor'),
  zvt('probe'),
];

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `tps` with each of `runs` to its end, a few at a time (each is a Node process). */
export async function runEach(
  runs: Array<{ args: string[]; env?: Record<string, string> }>,
  atOnce = 3,
): Promise<Ran[]> {
  const results: Ran[] = new Array<Ran>(runs.length);
  let next = 0;
  const worker = async () => {
    for (let index = next++; index < runs.length; index = next++) {
      const { args, env = {} } = runs[index]!;
      const child = spawnTps(args, env);
      let stdout = '';
      let stderr = '';
      child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
      results[index] = { code, stdout, stderr };
    }
  };
  await Promise.all(Array.from({ length: atOnce }, worker));
  return results;
}
