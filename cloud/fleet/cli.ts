/** `tps fleet …`: operate the account's terminals from the command line (docs/fleet.md). */
import { UsageError } from '../../common/cli.js';
import { runFleetConfig } from './config-cli.js';
import { diagnosticsCommand, runFleetFacts } from './diagnostics-cli.js';

export const FLEET_USAGE = `Usage: tps fleet <command> [options]

Commands:
  config get|set         a level's desired configuration; desired, reported, in sync
  facts                  agent version, reader, configuration, last update, last seen
  doctor                 a terminal's checklist, from its running agent
  logs                   a terminal's newest log lines
  trace                  the reader line of a terminal's last payment
  end-of-day             close a terminal's (or a cohort's) day now
  release publish FILE   publish an agent release archive to the relay
  rollout start|status|pause|resume   roll a release out to a cohort in waves

Run 'tps fleet <command> --help' for its options. The relay's address and the account
credential come from --base-url, --username, --password or TPS_BASE_URL,
TPS_ACCOUNT_USERNAME, TPS_ACCOUNT_PASSWORD.
`;

const commands: Record<string, (argv: string[]) => Promise<void>> = {
  config: runFleetConfig,
  facts: runFleetFacts,
  doctor: diagnosticsCommand('doctor'),
  logs: diagnosticsCommand('logs'),
  trace: diagnosticsCommand('trace'),
  'end-of-day': async (argv) => (await import('./end-of-day-cli.js')).runFleetEndOfDay(argv),
  release: async (argv) => (await import('./release-cli.js')).runRelease(argv),
  rollout: async (argv) => (await import('./rollout-cli.js')).runRollout(argv),
};

export async function runFleet(argv: string[]): Promise<void> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h') {
    process.stdout.write(FLEET_USAGE);
    return;
  }
  const command = commands[name];
  if (!command) throw new UsageError(`unknown command 'fleet ${name}'`, FLEET_USAGE);
  await command(rest);
}
