/**
 * One exit-code convention across every `tps` command, run as a person runs them (a
 * process each): 0 done, 1 failed, 2 given wrongly — with what is wrong and the command's
 * own usage on stderr. The commands are CLI_COMMANDS; a new group joins there.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CLI_COMMANDS, runEach, type Ran } from './support/cli-commands.js';
import { tempDataDir } from './support/relay.js';

/** The name the messages give a command: `tps` and at most two words. */
const nameOf = (argv: string[]) =>
  ['tps', ...argv.filter((a) => !a.startsWith('-')).slice(0, 2)].join(' ');

/** A port that was free a moment ago: nobody listens there. */
async function deadPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('tps exit codes', () => {
  it('an unknown option exits 2 on every command, naming it, with that command’s usage', async () => {
    const runs = await runEach(
      CLI_COMMANDS.map((command) => ({ args: [...command.argv, '--no-such-option'] })),
    );
    const wrong = CLI_COMMANDS.flatMap((command, index) => {
      const { code, stdout, stderr } = runs[index]!;
      const name = nameOf(command.argv);
      const ok =
        code === 2 &&
        stdout === '' &&
        stderr.startsWith(`${name}: Unknown option '--no-such-option'\n\nUsage: ${name}`);
      return ok
        ? []
        : [`tps ${command.argv.join(' ')}: exit ${code}, stderr ${stderr.slice(0, 160)}`];
    });
    expect(wrong).toEqual([]);
  }, 120_000);

  it('a missing argument or a bad value exits 2 and says which', async () => {
    const pos = { TPS_USERNAME: 'u', TPS_PASSWORD: 'p', TPS_TERMINAL_ID: 't-1900000001' };
    const operator = { TPS_OPERATOR_USERNAME: 'o', TPS_OPERATOR_PASSWORD: 'p' };
    const cases: Array<{ args: string[]; env?: Record<string, string>; says: RegExp }> = [
      {
        args: ['frobnicate'],
        says: /^tps: unknown command 'frobnicate'\n\nUsage: tps <command>/,
      },
      { args: ['pos', 'purchase', '--currency', 'EUR'], env: pos, says: /--amount: is needed/ },
      {
        args: ['pos', 'refund', '--amount', '1.5', '--currency', 'EUR'],
        env: pos,
        says: /--amount: must be an integer/,
      },
      {
        args: ['simulator', 'create', '--reader-protocol', 'opi'],
        says: /--reader-protocol must be native or zvt/,
      },
      {
        args: ['terminal', 'claim'],
        says: /the pairing CODE is needed\n\nUsage: tps terminal claim/,
      },
      { args: ['credential', 'revoke'], says: /revoke needs a USERNAME/ },
      { args: ['broker', 'mosquitto'], says: /--out DIR is needed/ },
      { args: ['agent', 'pair'], says: /--relay URL is needed\n\nUsage: tps agent pair/ },
      {
        args: ['agent', 'pair', '--relay', 'http://relay.example/pos'],
        says: /--relay must be an https:\/\/ address/,
      },
      { args: ['bridge', 'probe'], says: /probe needs one PORT\n\nUsage: tps bridge probe/ },
      {
        args: ['bridge', 'emulate', '--delay-ms', 'soon'],
        says: /--delay-ms must be a whole number from 0, not 'soon'/,
      },
      {
        args: ['bridge', 'print', 'tcp://127.0.0.1:9', 'x.png', '--cut', 'half'],
        says: /--cut must be one of partial, full, none/,
      },
      {
        args: ['bridge', 'monitor', '--protocol', 'opi', 'PORT'],
        says: /--protocol is native or zvt, not 'opi'/,
      },
      // No relay listens: exit 2 shows nothing was sent (a request would fail with 1).
      {
        args: ['fleet', 'config', 'set', '--terminal', 't-1900000001', '--heartbeat-s', 'abc'],
        says: /not a valid setting: heartbeat_s: .*\n\nUsage: tps fleet config set/,
      },
      {
        args: ['fleet', 'config', 'set', '--account', '--heartbeat-s', '0'],
        says: /not a valid setting: heartbeat_s: /,
      },
      {
        args: ['fleet', 'config', 'set', '--account', '--local-api', 'maybe'],
        says: /not a valid setting: local_api.enabled: /,
      },
      // The relay's level and the merchants' list are the operator's: its credential.
      {
        args: ['fleet', 'config', 'set', '--relay', '--heartbeat-s', '5'],
        says: /an operator username is needed \(--username or TPS_OPERATOR_USERNAME\)/,
      },
      {
        args: ['fleet', 'config', 'get', '--relay', '--account'],
        says: /one of --terminal ID, --cohort cohort-NAME, --account or --relay/,
      },
      {
        args: ['fleet', 'config', 'merchant-settings', 'set', 'heartbeat_s', 'volume'],
        env: { TPS_OPERATOR_USERNAME: 'o', TPS_OPERATOR_PASSWORD: 'p' },
        says: /not a setting: 'volume' \(one of heartbeat_s, .*\n\nUsage: tps fleet config merchant-settings/,
      },
      {
        args: ['fleet', 'config', 'merchant-settings', 'set', '--all', 'log_level'],
        env: { TPS_OPERATOR_USERNAME: 'o', TPS_OPERATOR_PASSWORD: 'p' },
        says: /set takes NAME\.\.\., --all or --none/,
      },
      {
        args: ['fleet', 'config', 'merchant-settings', 'remove'],
        says: /unknown command 'fleet config merchant-settings remove'/,
      },
      {
        args: ['fleet', 'rollout', 'start', '--version', '1.0.0', '--cohort', 'cohort-north'],
        env: operator,
        says: /--account-id ACCOUNT_ID is needed: .*\n\nUsage: tps fleet rollout start/,
      },
      {
        args: ['fleet', 'rollout', 'start', '--account-id', 'north', '--version', '1.0.0'],
        env: operator,
        says: /--account-id must be a merchant account id \(acct-…\), not 'north'/,
      },
      {
        args: ['fleet', 'rollout', 'status', '--account-id', 'acct-1'],
        says: /an operator username is needed \(--username or TPS_OPERATOR_USERNAME\)/,
      },
    ];
    const runs = await runEach(
      cases.map(({ args, env }) => ({
        args,
        env: { TPS_ACCOUNT_USERNAME: 'a', TPS_ACCOUNT_PASSWORD: 'b', ...env },
      })),
    );
    const wrong = cases.flatMap(({ args, says }, index) => {
      const { code, stderr } = runs[index]!;
      return code === 2 && says.test(stderr)
        ? []
        : [`tps ${args.join(' ')}: exit ${code}, ${stderr.slice(0, 200)}`];
    });
    expect(wrong).toEqual([]);
  }, 120_000);

  describe('with the relay down', () => {
    let port: number;
    let runs: Ran[];
    const dir = tempDataDir();
    const commands = [
      ['simulator', 'create'],
      ['terminal', 'create', '--out', path.join(dir, 'agent.json')],
      ['terminal', 'claim', '7KQ2-M9XD'],
      ['credential', 'revoke', 'key-1'],
      ['pos', 'status'],
      ['agent', 'pair', '--config', path.join(dir, 'paired.json')],
    ];
    beforeAll(async () => {
      port = await deadPort();
      const base = `http://127.0.0.1:${port}/pos`;
      runs = await runEach(
        commands.map((args) => ({
          args: args[0] === 'agent' ? [...args, '--relay', base] : [...args, '--base-url', base],
          env: {
            TPS_ACCOUNT_USERNAME: 'a',
            TPS_ACCOUNT_PASSWORD: 'b',
            TPS_USERNAME: 'u',
            TPS_PASSWORD: 'p',
            TPS_TERMINAL_ID: 't-1900000001',
            TPS_JOURNAL: path.join(dir, 'pos.sqlite'),
          },
        })),
      );
    }, 120_000);

    it('every command that calls it exits 1, saying which address refused and how', () => {
      const wrong = commands.flatMap((args, index) => {
        const { code, stderr } = runs[index]!;
        const said =
          stderr.startsWith(`${nameOf(args)}: `) &&
          stderr.includes(`127.0.0.1:${port} refused the connection (ECONNREFUSED)`) &&
          !stderr.includes('fetch failed');
        return code === 1 && said ? [] : [`tps ${args.join(' ')}: exit ${code}, ${stderr}`];
      });
      expect(wrong).toEqual([]);
    });
  });
});
