/** `tps` driven as a user drives it. */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadAgentConfig } from '../agent/config.js';
import { posFor, startTestRelay, tempDataDir, type TestRelay } from './support/relay.js';
import { spawnTps } from './support/relay-process.js';

function run(args: string[], env: Record<string, string> = {}) {
  const child = spawnTps(args, env);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.once('exit', (code) => resolve({ code, stdout, stderr })),
  );
}

describe('tps', () => {
  let relay: TestRelay;
  beforeAll(async () => {
    relay = await startTestRelay();
  });
  afterAll(async () => {
    await relay.close();
  });

  it('--version prints the release, as package.json has it', async () => {
    const { version } = JSON.parse(fs.readFileSync('package.json', 'utf8')) as { version: string };
    for (const flag of ['--version', '-V']) {
      const result = await run([flag]);
      expect(result.code).toBe(0);
      expect(result.stdout).toBe(`tps ${version}\n`);
    }
  });

  it('simulator create --json prints a working credential', async () => {
    const result = await run(['simulator', 'create', '--json', '--base-url', relay.baseUrl], {
      TPS_ACCOUNT_USERNAME: relay.account.username,
      TPS_ACCOUNT_PASSWORD: relay.account.password,
    });
    expect(result.code).toBe(0);
    const issued = JSON.parse(result.stdout);
    expect(issued).toEqual({
      terminal_id: expect.stringMatching(/^t-19\d{8}$/),
      username: expect.any(String),
      password: expect.any(String),
    });
    const pos = posFor(relay, issued);
    const paid = await pos.call('/transaction/purchase', {
      external_id: 'cli-1',
      requested_amount: 100002,
      currency: 'EUR',
    });
    expect(paid.body.transaction.result_code).toBe('SUCCESS');
  });

  it('terminal create --reader-protocol zvt writes an agent config for a ZVT terminal', async () => {
    const env = {
      TPS_ACCOUNT_USERNAME: relay.account.username,
      TPS_ACCOUNT_PASSWORD: relay.account.password,
    };
    const out = path.join(tempDataDir(), 'zvt', 'agent.json');
    const args = (file: string) => [
      ...['terminal', 'create', '--base-url', relay.baseUrl, '--out', file, '--json'],
    ];
    const zvt = ['--reader-protocol', 'zvt', '--reader-tcp', '192.168.1.50:20007'];
    const result = await run([...args(out), ...zvt, '--reader-password', '123456'], env);
    expect(result.code, result.stderr).toBe(0);
    expect(loadAgentConfig(out).reader).toMatchObject({
      protocol: 'zvt',
      tcp: '192.168.1.50:20007',
      password: '123456',
    });
    const wrong = await run([...args(`${out}.2`), ...zvt, '--reader-password', '12'], env);
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toContain("--reader-password must be the terminal's 6-digit password");
    expect(fs.existsSync(`${out}.2`)).toBe(false);
    const native = await run([...args(`${out}.3`), '--reader-tcp', 'pt:20007'], env);
    expect(native.stderr).toContain('--reader-tcp is for --reader-protocol zvt only');
  });

  it('terminal create writes an agent config the agent accepts, readable by its owner only', async () => {
    const out = path.join(tempDataDir(), 'provision', 'agent.json');
    const env = {
      TPS_ACCOUNT_USERNAME: relay.account.username,
      TPS_ACCOUNT_PASSWORD: relay.account.password,
    };
    const args = ['terminal', 'create', '--base-url', relay.baseUrl, '--out', out];
    const result = await run(
      [...args, '--emulated-reader', '--printer-tcp', '127.0.0.1:9100', '--json'],
      env,
    );
    expect(result.code, result.stderr).toBe(0);
    const printed = JSON.parse(result.stdout);
    expect(printed).toMatchObject({
      terminal_id: expect.stringMatching(/^t-\d{10}$/),
      config_file: out,
    });
    expect(fs.statSync(out).mode & 0o777).toBe(0o600);
    const config = loadAgentConfig(out);
    expect(config).toMatchObject({
      terminal_id: printed.terminal_id,
      broker: { url: relay.brokerUrl, username: printed.terminal_id },
      printer: { type: 'tcp', host: '127.0.0.1', port: 9100 },
    });
    expect(config.reader.emulated?.state_file).toBe(
      path.join(path.dirname(out), 'emulated-reader.json'),
    );
    const status = await posFor(relay, printed).call('/terminal/status', {});
    expect(status.body.status).toMatchObject({
      terminal_id: printed.terminal_id,
      connected: false,
    });

    const again = await run(args, env);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/exists/);
  });

  it('simulator create says which credential is missing or wrong', async () => {
    const missing = await run(['simulator', 'create', '--base-url', relay.baseUrl], {
      TPS_ACCOUNT_USERNAME: '',
      TPS_ACCOUNT_PASSWORD: '',
    });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/account username is needed/);
    const wrong = await run([
      'simulator',
      'create',
      '--base-url',
      relay.baseUrl,
      '--username',
      'x',
      '--password',
      'y',
    ]);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(/401.*UNAUTHORIZED/);
  });

  it('cloud refuses a bad configuration with every mistake named', async () => {
    const result = await run(['cloud'], { TPS_PORT: 'x', TPS_PAUSE_TIMEOUT_S: '-5' });
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/TPS_PORT \(--port\)/);
    expect(result.stderr).toMatch(/TPS_PAUSE_TIMEOUT_S/);
  });

  it('credential rotate prints a new secret that works, then revoke stops it', async () => {
    const sim = await relay.newSimulator();
    const account = {
      TPS_ACCOUNT_USERNAME: relay.account.username,
      TPS_ACCOUNT_PASSWORD: relay.account.password,
    };
    const status = (password: string) =>
      posFor(relay, { ...sim, password })
        .call('/terminal/status', {})
        .then((r) => r.status);
    const rotated = await run(
      ['credential', 'rotate', sim.username, '--base-url', relay.baseUrl],
      account,
    );
    expect(rotated.code).toBe(0);
    const password = /password (\S+)/.exec(rotated.stdout)?.[1];
    expect(password).toBeDefined();
    expect(await status(sim.password)).toBe(401);
    expect(await status(password!)).toBe(200);

    const revoked = await run(
      ['credential', 'revoke', sim.username, '--base-url', relay.baseUrl],
      account,
    );
    expect(revoked).toMatchObject({ code: 0, stdout: `Credential ${sim.username} revoked.\n` });
    expect(await status(password!)).toBe(401);
    const again = await run(
      ['credential', 'revoke', sim.username, '--base-url', relay.baseUrl],
      account,
    );
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/404.*CREDENTIAL_NOT_FOUND/);
  });

  it('account: the operator creates, lists, disables and enables a merchant account', async () => {
    const operator = {
      TPS_OPERATOR_USERNAME: relay.operator.username,
      TPS_OPERATOR_PASSWORD: relay.operator.password,
      TPS_BASE_URL: relay.baseUrl,
    };
    const created = await run(['account', 'create', 'Cafe Nord'], operator);
    expect(created.code, created.stderr).toBe(0);
    const id = /^(acct-\S+) {2}merchant {2}Cafe Nord$/m.exec(created.stdout)?.[1];
    const password = /password (\S+)/.exec(created.stdout)?.[1];
    const username = /username (\S+)/.exec(created.stdout)?.[1];
    expect([id, username, password].every(Boolean)).toBe(true);
    const merchant = { username: username!, password: password! };
    const terminals = () =>
      fetch(`${relay.baseUrl}/v1/terminal/list`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${merchant.username}:${merchant.password}`).toString('base64')}`,
          'content-type': 'application/json',
        },
        body: '{}',
      }).then((r) => r.status);
    expect(await terminals()).toBe(200);

    const listed = await run(['account', 'list', '--json'], operator);
    expect(JSON.parse(listed.stdout).accounts).toContainEqual(
      expect.objectContaining({ account_id: id, name: 'Cafe Nord', kind: 'merchant' }),
    );
    const disabled = await run(['account', 'disable', id!], operator);
    expect(disabled.stdout).toMatch(new RegExp(`^${id}  merchant  Cafe Nord  disabled since `));
    expect(await terminals()).toBe(401);
    expect((await run(['account', 'enable', id!], operator)).code).toBe(0);
    expect(await terminals()).toBe(200);
    // Given wrongly: nothing sent (exit 2); the account credential is not the operator's (1).
    expect((await run(['account', 'create'], operator)).code).toBe(2);
    expect((await run(['account', 'disable', 'nobody'], operator)).code).toBe(2);
    const notOperator = await run(['account', 'list'], {
      TPS_OPERATOR_USERNAME: relay.account.username,
      TPS_OPERATOR_PASSWORD: relay.account.password,
      TPS_BASE_URL: relay.baseUrl,
    });
    expect([notOperator.code, notOperator.stderr]).toEqual([
      1,
      expect.stringMatching(/403.*FORBIDDEN/),
    ]);
  });

  it('--account-id: the operator acts for a merchant account, with its own credential', async () => {
    const operator = {
      TPS_OPERATOR_USERNAME: relay.operator.username,
      TPS_OPERATOR_PASSWORD: relay.operator.password,
      TPS_BASE_URL: relay.baseUrl,
    };
    const created = await run(['account', 'create', 'Cafe Sud', '--json'], operator);
    const { account_id: id } = JSON.parse(created.stdout).account;
    // The operator registers a terminal into the account, and adds it a credential.
    const out = path.join(tempDataDir(), 'operator', 'agent.json');
    const terminal = await run(
      ['terminal', 'create', '--out', out, '--emulated-reader', '--account-id', id, '--json'],
      operator,
    );
    expect(terminal.code, terminal.stderr).toBe(0);
    const terminalId = JSON.parse(terminal.stdout).terminal_id;
    const added = await run(['credential', 'add', '--account-id', id], operator);
    expect(added.code, added.stderr).toBe(0);
    expect(added.stdout).toMatch(new RegExp(`added to ${id}`));
    const merchant = {
      TPS_ACCOUNT_USERNAME: /username (\S+)/.exec(added.stdout)![1]!,
      TPS_ACCOUNT_PASSWORD: /password (\S+)/.exec(added.stdout)![1]!,
      TPS_BASE_URL: relay.baseUrl,
    };
    // The merchant, with that credential, and the operator naming it see the same fleet.
    const byMerchant = await run(['fleet', 'facts', '--json'], merchant);
    const byOperator = await run(['fleet', 'facts', '--account-id', id, '--json'], operator);
    const ids = (result: { stdout: string }) =>
      JSON.parse(result.stdout).terminals.map((t: { terminal_id: string }) => t.terminal_id);
    expect(ids(byMerchant)).toEqual([terminalId]);
    expect(ids(byOperator)).toEqual([terminalId]);
    // The operator sets the account's level of configuration; the merchant reads it.
    const set = await run(
      ['fleet', 'config', 'set', '--account', '--heartbeat-s', '40', '--account-id', id],
      operator,
    );
    expect(set.code, set.stderr).toBe(0);
    const layer = await run(['fleet', 'config', 'get', '--account', '--json'], merchant);
    expect(JSON.parse(layer.stdout).layer).toEqual({ heartbeat_s: 40 });
    // Without it the command is the account's; given wrongly, nothing is sent (2).
    const unnamed = await run(['fleet', 'facts'], operator);
    expect([unnamed.code, unnamed.stderr]).toEqual([
      2,
      expect.stringMatching(/TPS_ACCOUNT_USERNAME/),
    ]);
    expect((await run(['fleet', 'facts', '--account-id', 'nobody'], operator)).code).toBe(2);
    expect((await run(['credential', 'add', 'extra'], merchant)).code).toBe(2);
  });

  it('fleet config: the operator sets the relay level and the settings merchants may set', async () => {
    const operator = {
      TPS_OPERATOR_USERNAME: relay.operator.username,
      TPS_OPERATOR_PASSWORD: relay.operator.password,
      TPS_BASE_URL: relay.baseUrl,
    };
    const merchant = {
      TPS_ACCOUNT_USERNAME: relay.account.username,
      TPS_ACCOUNT_PASSWORD: relay.account.password,
      TPS_BASE_URL: relay.baseUrl,
    };
    const set = await run(['fleet', 'config', 'set', '--relay', '--log-level', 'warn'], operator);
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toMatch(
      /^Configuration set for the relay \(under every account\) \(changed /,
    );
    expect(set.stdout).toContain('{"log_level":"warn"}');
    const got = await run(['fleet', 'config', 'get', '--relay', '--json'], operator);
    expect(JSON.parse(got.stdout).layer).toEqual({ log_level: 'warn' });
    // The account credential does not reach the relay's level.
    const notOperator = await run(['fleet', 'config', 'get', '--relay'], {
      ...merchant,
      TPS_OPERATOR_USERNAME: relay.account.username,
      TPS_OPERATOR_PASSWORD: relay.account.password,
    });
    expect([notOperator.code, notOperator.stderr]).toEqual([
      1,
      expect.stringMatching(/403.*FORBIDDEN/),
    ]);

    const never = await run(['fleet', 'config', 'merchant-settings'], operator);
    expect(never.stdout).toMatch(/never set: every setting\):\n {2}heartbeat_s, log_level, /);
    const narrowed = await run(
      ['fleet', 'config', 'merchant-settings', 'set', 'idle-screen-text,heartbeat_s'],
      operator,
    );
    expect(narrowed.code, narrowed.stderr).toBe(0);
    expect(narrowed.stdout).toMatch(/\(set \S+\):\n {2}heartbeat_s, idle_screen_text\n$/);
    const refused = await run(
      ['fleet', 'config', 'set', '--account', '--log-level', 'debug'],
      merchant,
    );
    expect([refused.code, refused.stderr]).toEqual([
      1,
      expect.stringMatching(/403.*merchants may not set log_level/),
    ]);
    const allowed = await run(
      ['fleet', 'config', 'set', '--account', '--heartbeat-s', '20'],
      merchant,
    );
    expect(allowed.code, allowed.stderr).toBe(0);
    const all = await run(
      ['fleet', 'config', 'merchant-settings', 'set', '--all', '--json'],
      operator,
    );
    expect(JSON.parse(all.stdout).settings).toHaveLength(8);
    await run(['fleet', 'config', 'set', '--relay', '--replace'], operator);
  }, 90_000);

  it('prints usage for no command and for --help', async () => {
    const usage = await run([]);
    expect(usage.code).toBe(0);
    expect(usage.stdout).toMatch(/Usage: tps <command>/);
    const help = await run(['cloud', '--help']);
    expect(help.stdout).toMatch(/TPS_SIMULATOR_DELAY_MS/);
  });
});
