/** `tps fleet …`: operate the account's terminals from the command line (docs/fleet.md). */
export const FLEET_USAGE = `Usage: tps fleet <command> [options]

Commands:
`;

const commands: Record<string, (argv: string[]) => Promise<void>> = {};

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
