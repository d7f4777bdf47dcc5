#!/usr/bin/env node
/**
 * The one command-line entry: `tps <command> …`. Each command loads only what it needs.
 * Exit codes, for every command (docs/cli.md): 0 done, 1 failed, 2 given wrongly — a
 * command throws a UsageError (common/cli.ts) for that, and this file alone maps it.
 */
import { EXIT, isUsageError } from '../common/cli.js';
import { unsupportedNodeMessage } from '../common/node-line.js';
import { printable } from '../common/terminal-text.js';

const USAGE = `Usage: tps <command> [options]

Commands:
  cloud              run the cloud relay (HTTP API, store, simulated terminals)
  simulator create   create a simulated terminal on a running relay
  terminal create    register a real terminal and write its agent's config file
  terminal claim     pair the terminal that shows a pairing code ('tps agent pair')
  credential revoke  revoke (or rotate) one of the account's credentials on a running relay
  broker mosquitto   write Mosquitto's password and ACL files for the agents (also: broker emqx)
  bridge             bench tools: emulate, monitor, probe, print (tps bridge --help)
  pos <command>      act as a POS: purchase, refund, confirm, get, status, events…
  agent              run the terminal agent (--config FILE); 'agent doctor' checks its setup;
                     'agent pair' pairs a fresh terminal by a code
  fleet              operate the account's terminals: config, diagnostics, releases
  account            the operator's merchant accounts: create, list, disable, enable

Run 'tps <command> --help' for the options of a command, 'tps --version' for the release.
`;

const commands: Record<string, (argv: string[]) => Promise<void>> = {
  cloud: async (argv) => (await import('../cloud/cli.js')).runCloud(argv),
  simulator: async (argv) => (await import('../cloud/cli.js')).runSimulator(argv),
  terminal: async (argv) =>
    argv[0] === 'claim'
      ? (await import('../cloud/pairing/claim-cli.js')).runTerminalClaim(argv.slice(1))
      : (await import('../cloud/terminal-cli.js')).runTerminal(argv),
  credential: async (argv) => (await import('../cloud/cli.js')).runCredential(argv),
  account: async (argv) => (await import('../cloud/account-cli.js')).runAccount(argv),
  broker: async (argv) => (await import('../cloud/broker-cli.js')).runBroker(argv),
  bridge: async (argv) => (await import('../firmware-bridge/cli.js')).runBridge(argv),
  pos: async (argv) => (await import('../client/cli.js')).runPos(argv),
  agent: async (argv) => (await import('../agent/cli.js')).runAgent(argv),
  fleet: async (argv) => (await import('../cloud/fleet/cli.js')).runFleet(argv),
};

async function main(argv: string[]): Promise<void> {
  const refusal = unsupportedNodeMessage(process.versions.node);
  if (refusal) {
    process.stderr.write(refusal);
    process.exitCode = EXIT.failed;
    return;
  }
  const [name, ...rest] = argv;
  if (name === '--version' || name === '-V' || name === 'version') {
    process.stdout.write(`tps ${(await import('../common/version.js')).VERSION}\n`);
    return;
  }
  const command = name ? commands[name] : undefined;
  if (name === undefined || name === '--help' || name === '-h') {
    process.stdout.write(USAGE);
    return;
  }
  if (!command) {
    process.stderr.write(`tps: unknown command '${name}'\n\n${USAGE}`);
    process.exitCode = EXIT.usage;
    return;
  }
  await command(rest);
}

const indented = (text: string) => text.replaceAll('\n', '\n  ');

/** The words that name the command run (`tps pos purchase`), for its messages. */
function commandName(argv: string[]): string {
  const words = [];
  for (const arg of argv) {
    if (arg.startsWith('-') || words.length === 2) break;
    words.push(arg);
  }
  return ['tps', ...words].join(' ');
}

main(process.argv.slice(2)).catch((error: unknown) => {
  const name = commandName(process.argv.slice(2));
  if (isUsageError(error)) {
    const message = error.message.includes('\n')
      ? `\n  ${indented(error.message)}`
      : ` ${error.message}`;
    const usage = error.usage ?? `Run '${name} --help' for its options.\n`;
    process.stderr.write(`${name}:${message}\n\n${usage}`);
    process.exitCode = EXIT.usage;
    return;
  }
  // A relay's message may quote what an agent said: shown, never obeyed (common/terminal-text.ts).
  const message = error instanceof Error ? error.message : String(error);
  process.stderr.write(`${name}: ${printable(message, { multiline: true })}\n`);
  process.exitCode = EXIT.failed;
});
