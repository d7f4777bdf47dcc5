/**
 * Each command's `--help` and the page that documents it say the same, as docs/errors.md
 * and the error catalogue do: every option `--help` lists is on the page, and every
 * option the page gives the command exists. The commands are CLI_COMMANDS.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CLI_COMMANDS, runEach, type CliCommand, type Ran } from './support/cli-commands.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const OPTION = /--[a-z][a-z0-9-]*/g;

/** The options a usage text lists: the first column of its indented option lines. */
export function helpOptions(help: string): Set<string> {
  const options = new Set<string>();
  for (const line of help.split('\n')) {
    const match = /^\s+(-\w, )?(--[a-z][^\s]*(?: [^\s-][^\s]*)?(?:, --[a-z][a-z0-9-]*)*)/.exec(
      line,
    );
    if (!match) continue;
    const column = line.trim().split(/\s{2,}/)[0]!;
    for (const option of column.match(OPTION) ?? []) options.add(option);
  }
  return options;
}

/**
 * The options a page gives a command: those in the section whose heading names it, and
 * those on any line that runs it (`tps pos purchase --amount …`), up to the end of that
 * command (a closing backtick, a pipe to another command, a comment, a column gap).
 */
export function pageOptions(
  page: string,
  argv: string[],
  subcommands: string[][] = [],
): Set<string> {
  const command = `tps ${argv.join(' ')}`;
  // `tps agent pair --relay` is pair's, not the agent's.
  const longer = subcommands
    .map((words) => `tps ${words.join(' ')}`)
    .filter((c) => c.startsWith(`${command} `));
  const lines = page.split('\n');
  const options = new Set<string>();
  const heading = lines.findIndex((l) => /^#+ /.test(l) && l.includes(`\`${command}\``));
  if (heading >= 0) {
    const level = /^#+/.exec(lines[heading]!)![0].length;
    for (let i = heading + 1; i < lines.length; i++) {
      const h = /^#+ /.exec(lines[i]!);
      if (h && h[0].length - 1 <= level) break;
      for (const option of lines[i]!.match(OPTION) ?? []) options.add(option);
    }
  }
  for (const line of lines) {
    let at = line.indexOf(command);
    while (at >= 0) {
      const after = line.slice(at + command.length);
      const sub = longer.some(
        (c) => line.startsWith(c, at) && /^($|[\s`|])/.test(line.slice(at + c.length)),
      );
      if (!sub && /^($|[\s`|])/.test(after)) {
        const end = after.search(/`|\s\|\s|\s#|\s{2,}\S/);
        for (const option of (end < 0 ? after : after.slice(0, end)).match(OPTION) ?? []) {
          options.add(option);
        }
      }
      at = line.indexOf(command, at + 1);
    }
  }
  return options;
}

describe('each command’s --help and its docs page', () => {
  let helps: Ran[];
  beforeAll(async () => {
    helps = await runEach(CLI_COMMANDS.map((c) => ({ args: [...c.argv, '--help'] })));
  }, 120_000);

  /** The problems `check` finds, over every command: one list, to see them all at once. */
  const problems = (check: (command: CliCommand, help: Ran, page: string) => string[]) =>
    CLI_COMMANDS.flatMap((command, index) => {
      const page = fs.readFileSync(path.join(ROOT, command.page), 'utf8');
      const name = `tps ${command.argv.join(' ')}`;
      return check(command, helps[index]!, page).map((problem) => `${name}: ${problem}`);
    });

  it('--help prints the command’s own usage and exits 0', () => {
    expect(
      problems((command, help) =>
        help.code === 0 &&
        help.stderr === '' &&
        help.stdout.startsWith(`Usage: tps ${command.argv.join(' ')}`)
          ? []
          : [`exit ${help.code}, ${help.stderr}${help.stdout.slice(0, 80)}`],
      ),
    ).toEqual([]);
  });

  it('every option --help lists is on the page that documents the command', () => {
    expect(
      problems((command, help, page) => {
        const onPage = new Set(page.match(OPTION) ?? []);
        return [...helpOptions(help.stdout)]
          .filter((option) => option !== '--help' && !onPage.has(option))
          .map((option) => `${option} is not on ${command.page}`);
      }),
    ).toEqual([]);
  });

  it('every option the page gives the command exists', () => {
    expect(
      problems((command, help, page) => {
        const known = helpOptions(help.stdout);
        const all = CLI_COMMANDS.map((c) => c.argv);
        return [...pageOptions(page, command.argv, all)]
          .filter((option) => option !== '--help' && !known.has(option))
          .filter((option) => !command.argv.includes(option))
          .map((option) => `${command.page} gives it ${option}, which --help does not list`);
      }),
    ).toEqual([]);
  });
});
