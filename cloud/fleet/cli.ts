/** `tps fleet …`: operate the account's terminals from the command line (docs/fleet.md). */
export const FLEET_USAGE = `Usage: tps fleet <command> [options]

Commands:
  release publish FILE   publish an agent release archive to the relay

Run 'tps fleet <command> --help' for its options. The relay's address and the account
credential come from --base-url, --username, --password or TPS_BASE_URL,
TPS_ACCOUNT_USERNAME, TPS_ACCOUNT_PASSWORD.
`;

const commands: Record<string, (argv: string[]) => Promise<void>> = {
  release: async (argv) => (await import('./release-cli.js')).runRelease(argv),
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
