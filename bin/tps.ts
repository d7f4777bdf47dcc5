#!/usr/bin/env node
/** The one command-line entry: `tps <command> …`. Each command loads only what it needs. */
const USAGE = `Usage: tps <command> [options]

Commands:
  cloud              run the cloud relay (HTTP API, store, simulated terminals)
  simulator create   create a simulated terminal on a running relay

Run 'tps <command> --help' for the options of a command.
`;

const commands: Record<string, (argv: string[]) => Promise<void>> = {
  cloud: async (argv) => (await import('../cloud/cli.js')).runCloud(argv),
  simulator: async (argv) => (await import('../cloud/cli.js')).runSimulator(argv),
};

async function main(argv: string[]): Promise<void> {
  const [name, ...rest] = argv;
  const command = name ? commands[name] : undefined;
  if (!command) {
    process.stdout.write(USAGE);
    process.exitCode = name === undefined || name === '--help' || name === '-h' ? 0 : 2;
    return;
  }
  await command(rest);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`tps: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
