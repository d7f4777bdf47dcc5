/** `tps fleet …`: operate the account's terminals from the command line (docs/fleet.md). */
import { runFleetConfig } from './config-cli.js';
import { diagnosticsCommand, runFleetFacts } from './diagnostics-cli.js';

export const FLEET_USAGE = `Usage: tps fleet <command> [options]

Commands:
  config get|set   a level's desired configuration; desired, reported, in sync
  facts            agent version, reader, configuration, last update, last seen
  doctor           a terminal's checklist, from its running agent
  logs             a terminal's newest log lines
  trace            the reader line of a terminal's last payment

'tps fleet <command> --help' for each.
`;

const commands: Record<string, (argv: string[]) => Promise<void>> = {
  config: runFleetConfig,
  facts: runFleetFacts,
  doctor: diagnosticsCommand('doctor'),
  logs: diagnosticsCommand('logs'),
  trace: diagnosticsCommand('trace'),
};

export async function runFleet(argv: string[]): Promise<void> {
  const [name, ...rest] = argv;
  const command = name ? commands[name] : undefined;
  if (!command) {
    process.stdout.write(FLEET_USAGE);
    process.exitCode = name === undefined || name === '--help' || name === '-h' ? 0 : 2;
    return;
  }
  await command(rest);
}
