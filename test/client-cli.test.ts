/**
 * `tps pos` driven as a developer drives it: the relay started as a process (`tps
 * cloud`), a simulated terminal created through the API, then purchases and refunds
 * with their screens, results and receipts, in human and --json output.
 */
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnTps, startRelayProcess, type RelayProcess } from './support/relay-process.js';
import { post, tempDataDir } from './support/relay.js';

const ACCOUNT = { username: 'cli-account', password: 'cli-account-password' };
let relay: RelayProcess;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-cli-'));
/** One terminal (and journal) per test, so the tests run side by side. */
const terminals: Record<'chain' | 'json' | 'declined' | 'misc', Record<string, string>> = {
  chain: {},
  json: {},
  declined: {},
  misc: {},
};

beforeAll(async () => {
  relay = await startRelayProcess({
    TPS_DATA_DIR: tempDataDir(),
    TPS_ACCOUNT_USERNAME: ACCOUNT.username,
    TPS_ACCOUNT_PASSWORD: ACCOUNT.password,
    TPS_DEFAULT_SIMULATOR: 'false',
    // Long enough for the screen to be read while the terminal works.
    TPS_SIMULATOR_DELAY_MS: '300',
  });
  for (const name of Object.keys(terminals) as Array<keyof typeof terminals>) {
    const created = await post(relay.baseUrl, 'v1', '/simulator/create', {}, ACCOUNT);
    expect(created.status).toBe(200);
    terminals[name] = {
      TPS_BASE_URL: relay.baseUrl,
      TPS_USERNAME: created.body.username,
      TPS_PASSWORD: created.body.password,
      TPS_TERMINAL_ID: created.body.terminal_id,
      TPS_JOURNAL: path.join(dir, `${name}.sqlite`),
    };
  }
});
afterAll(async () => {
  await relay?.kill();
});

async function tps(args: string[], env: Record<string, string>) {
  const child = spawnTps(['pos', ...args], env);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  const [code] = await once(child, 'exit');
  return { code: code as number | null, stdout, stderr };
}

describe.concurrent('tps pos', () => {
  // Four CLI processes in a row, each loading the sources through tsx: about 15 s alone.
  it('purchase shows the screen, the result and the receipt, and confirms; then refunds, human and --json', async () => {
    const env = terminals.chain;
    const run = await tps(
      ['purchase', '--amount', '1000', '--currency', 'EUR', '--external-id', 'cli-buy'],
      env,
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`Purchase cli-buy: EUR 10.00 on terminal ${env.TPS_TERMINAL_ID}`);
    // The screen's wording is the terminal's own; that it is shown is what counts.
    expect(run.stdout).toMatch(/^Terminal: [A-Z_]+ - .+$/m);
    expect(run.stdout).toMatch(/^Result: SUCCESS, total EUR 10.00$/m);
    expect(run.stdout).toMatch(
      /-- customer receipt -+\n\s+PURCHASE\n[\s\S]*APPROVED[\s\S]*CUSTOMER COPY/,
    );
    expect(run.stdout).toMatch(/^Confirmed \(CONFIRMED\)\.$/m);

    const refund = await tps(
      ['refund', '--amount', '400', '--currency', 'EUR', '--original', 'cli-buy'],
      env,
    );
    expect(refund.code, refund.stderr).toBe(0);
    expect(refund.stdout).toMatch(/^Refund pos-\S+: EUR 4.00 on terminal/m);
    expect(refund.stdout).toMatch(/^Result: SUCCESS, total EUR 4.00$/m);
    expect(refund.stdout).toMatch(/\s+REFUND\n/);
    expect(refund.stdout).toMatch(/^Confirmed \(CONFIRMED\)\.$/m);

    const json = await tps(
      [
        'refund',
        '--amount',
        '600',
        '--currency',
        'EUR',
        '--original',
        'cli-buy',
        '--external-id',
        'cli-refund',
        '--json',
      ],
      env,
    );
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      type: 'REFUND',
      state: 'CONFIRMED',
      result_code: 'SUCCESS',
      external_id: 'cli-refund',
      original_purchase_external_id: 'cli-buy',
    });
    const left = await tps(['get', '--external-id', 'cli-buy', '--extra-amounts', '--json'], env);
    expect(JSON.parse(left.stdout).extra_amounts).toEqual({ refundable_amount: 0 });
  }, 60_000);

  it('purchase --json prints only the final transaction', async () => {
    const env = terminals.json;
    const json = await tps(['purchase', '--amount', '2500', '--currency', 'EUR', '--json'], env);
    expect(json.code, json.stderr).toBe(0);
    expect(json.stdout.trim().split('\n')).toHaveLength(1);
    expect(JSON.parse(json.stdout)).toMatchObject({
      type: 'PURCHASE',
      state: 'CONFIRMED',
      result_code: 'SUCCESS',
      requested_amount: 2500,
      terminal_id: env.TPS_TERMINAL_ID,
      external_id: expect.stringMatching(/^pos-/),
    });
  });

  it('a declined purchase is reported, recorded as failed, and exits 3', async () => {
    const run = await tps(
      ['purchase', '--amount', '100006', '--currency', 'EUR'],
      terminals.declined,
    );
    expect(run.code).toBe(3);
    expect(run.stdout).toMatch(
      /^Result: DECLINED_BY_ISSUER \(The card issuer declined the transaction\.\)/m,
    );
    expect(run.stdout).toMatch(/PAYMENT FAILED/);
    expect(run.stdout).toMatch(/^Recorded as failed \(COMMITTED\)\.$/m);
  });

  it('confirm, get, unconfirmed, status, print, local-trust, then events', async () => {
    const env = terminals.misc;
    const image = new PNG({ width: 16, height: 16 });
    image.data.fill(255);
    const file = path.join(dir, 'logo.png');
    fs.writeFileSync(file, PNG.sync.write(image));
    const confirm = await tps(
      ['confirm', '--external-id', 'never-seen', '--result-code', 'ABORTED'],
      env,
    );
    expect(confirm.stdout).toMatch(/^never-seen {2}UNKNOWN {2}COMMITTED {2}ABORTED/);
    const caFile = path.join(dir, 'tps-ca.pem');
    const [get, unconfirmed, status, print, trust, events] = await Promise.all([
      tps(['get', '--external-id', 'never-seen'], env),
      tps(['unconfirmed'], env),
      tps(['status', '--json'], env),
      tps(['print', file], env),
      tps(['local-trust', '--out', caFile], env),
      tps(['events', '--type', 'Transaction', '--json'], env),
    ]);
    // The authority into the file, notes on stderr; never over a file that is there.
    expect(trust.code, trust.stderr).toBe(0);
    expect(trust.stdout).toBe('');
    expect(fs.readFileSync(caFile, 'utf8')).toMatch(/^-----BEGIN CERTIFICATE-----\n/);
    expect(trust.stderr).toContain('no certificate yet');
    const again = await tps(['local-trust', '--out', caFile], env);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('EEXIST');
    expect(get.stdout).toMatch(/^UNKNOWN never-seen \(txn-\S+\) on terminal/m);
    expect(get.stdout).toMatch(/state +COMMITTED/);
    expect(unconfirmed.stdout).toBe('No unconfirmed transactions.\n');
    expect(JSON.parse(status.stdout)).toMatchObject({
      terminal_id: env.TPS_TERMINAL_ID,
      connected: true,
      transaction_state: 'READY',
    });
    expect(print.stdout).toBe(`Queued ${file} for printing on terminal ${env.TPS_TERMINAL_ID}.\n`);
    for (const run of [confirm, get, unconfirmed, status, print]) expect(run.code).toBe(0);
    expect(events.code, events.stderr).toBe(0);
    const lines = events.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      specversion: '1.0',
      subject: env.TPS_TERMINAL_ID,
      type: expect.stringMatching(/\.api\.pos\.v0\.Transaction$/),
      data: { external_id: 'never-seen', state: 'COMMITTED' },
    });
  }, 60_000); // eight tps processes one after another, each a Node start

  it('names every missing or wrong setting in one go, and exits 2', async () => {
    const run = await tps(['purchase', '--amount', '10.5', '--currency', 'eur'], {
      ...terminals.misc,
      TPS_USERNAME: '',
      TPS_TERMINAL_ID: '',
    });
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--username \/ TPS_USERNAME: a username is needed/);
    expect(run.stderr).toMatch(/--terminal \/ TPS_TERMINAL_ID: a terminal id is needed/);
    expect(run.stderr).toMatch(/--amount: must be an integer in minor units/);
    expect(run.stderr).toMatch(/--currency: must be 3 uppercase letters/);
  });
});
