/** `tps` driven as a user drives it. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { posFor, startTestRelay, type TestRelay } from './support/relay.js';
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

  it('simulator create says which credential is missing or wrong', async () => {
    const missing = await run(['simulator', 'create', '--base-url', relay.baseUrl], {
      TPS_ACCOUNT_USERNAME: '',
      TPS_ACCOUNT_PASSWORD: '',
    });
    expect(missing.code).toBe(1);
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
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/TPS_PORT \(--port\)/);
    expect(result.stderr).toMatch(/TPS_PAUSE_TIMEOUT_S/);
  });

  it('prints usage for no command and for --help', async () => {
    const usage = await run([]);
    expect(usage.code).toBe(0);
    expect(usage.stdout).toMatch(/Usage: tps <command>/);
    const help = await run(['cloud', '--help']);
    expect(help.stdout).toMatch(/TPS_SIMULATOR_DELAY_MS/);
  });
});
