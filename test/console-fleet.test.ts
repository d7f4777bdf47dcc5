/**
 * The console's fleet pages in Chromium, against `tps cloud` and a fresh agent (`tps agent
 * pair --start`, emulated reader) as processes. The operator creates a merchant account on
 * its Accounts page; the merchant signs in with the credential shown and claims the code the agent
 * shows (a wrong one refused with the reason), sees the terminal online with its versions,
 * changes a setting of its terminal layer and sees it in sync (a bad one refused as the
 * API says), runs a doctor and reads it, closes the day. The operator picks the account
 * and sees the same terminal, without its local mode or end-of-day. Each page is checked
 * by axe-core at desktop and phone widths and saved in test-output/console/.
 */
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsole } from '../bin/build-console.js';
import {
  CHROMIUM,
  DESKTOP,
  checkBothWidths,
  chromiumAvailable,
  signIn,
} from './support/console-page.js';
import {
  eventually,
  runTps,
  startRelayChild,
  type RelayChild,
  type TpsChild,
} from './support/e2e-parts.js';
import { tempDataDir } from './support/relay.js';
import { repoRoot } from './support/tps-command.js';

const ACCOUNT = { username: 'fleet-account', password: 'fleet-account-password' };
const OPERATOR = { username: 'fleet-operator', password: 'fleet-operator-password' };
const AGENT_VERSION = (
  JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { version: string }
).version;

describe.skipIf(!chromiumAvailable)(`the console's fleet pages in Chromium (${CHROMIUM})`, () => {
  const dir = tempDataDir();
  let relay: RelayChild;
  let agent: TpsChild;
  let browser: Browser;
  let origin = '';
  let code = '';
  /** The terminal the merchant claimed, and its account, for the operator's test. */
  let terminalId = '';
  let accountId = '';
  const context = () => `--- agent ---\n${agent.output()}\n--- relay ---\n${relay.output()}`;

  beforeAll(async () => {
    await buildConsole();
    relay = await startRelayChild({
      TPS_DATA_DIR: path.join(dir, 'relay-data'),
      TPS_ACCOUNT_USERNAME: ACCOUNT.username,
      TPS_ACCOUNT_PASSWORD: ACCOUNT.password,
      TPS_OPERATOR_USERNAME: OPERATOR.username,
      TPS_OPERATOR_PASSWORD: OPERATOR.password,
      TPS_DEFAULT_SIMULATOR: 'false',
    });
    origin = relay.baseUrl.replace(/\/pos$/, '');
    agent = runTps([
      'agent',
      'pair',
      ...['--relay', relay.baseUrl, '--config', path.join(dir, 'terminal', 'agent.json')],
      ...['--emulated-reader', '--data-dir', 'agent-data', '--start'],
    ]);
    code = (await eventually(
      () => /Pairing code: (\S{4}-\S{4})/.exec(agent.output())?.[1],
      (found) => found !== undefined,
      { ms: 20_000, what: 'the agent to show a pairing code', context },
    ))!;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await agent?.stop();
    await relay?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Reads `locator`'s text after pressing Refresh, until it holds what is expected. */
  const refreshed = (page: Page, selector: string) => async () => {
    await page.getByRole('button', { name: 'Refresh' }).click();
    return page.locator(selector).textContent();
  };

  it('the operator makes a merchant, who claims the code, sees the terminal online with its versions, sets its idle text in sync, runs a doctor', async () => {
    // The operator creates the merchant's account; its credential is shown once.
    const operator = await browser.newPage({ viewport: DESKTOP });
    await operator.goto(`${origin}/`);
    await signIn(operator, OPERATOR);
    await operator.getByRole('heading', { level: 1, name: 'Accounts' }).waitFor();
    await operator.getByLabel('Name').fill('Cafe Nord');
    await operator.getByRole('button', { name: 'Create', exact: true }).click();
    const secret = operator.locator('pre.secret');
    await expect.poll(() => secret.textContent()).toMatch(/password\s+\S+/);
    const shown = (await secret.textContent())!;
    accountId = /account_id\s+(\S+)/.exec(shown)![1]!;
    const merchant = {
      username: /username\s+(\S+)/.exec(shown)![1]!,
      password: /password\s+(\S+)/.exec(shown)![1]!,
    };
    await operator.close();

    const page = await browser.newPage({ viewport: DESKTOP });
    await page.goto(`${origin}/console/#/fleet/claim`);
    await signIn(page, merchant);
    await page.getByRole('heading', { level: 1, name: 'Claim a terminal' }).waitFor();
    expect(await checkBothWidths(page, 'fleet-claim')).toEqual([]);

    // A code of no waiting terminal, and one that is no code at all: refused, saying why.
    const problem = page.locator('#claim-problem');
    await page.getByLabel('Pairing code').fill('ZZZZ-ZZZZ');
    await page.getByRole('button', { name: 'Claim' }).click();
    await expect.poll(() => problem.textContent()).toContain('PAIRING_NOT_FOUND');
    expect(await problem.textContent()).toContain('Read it again from the terminal');
    await page.getByLabel('Pairing code').fill('I0L0');
    await page.getByRole('button', { name: 'Claim' }).click();
    await expect.poll(() => problem.textContent()).toMatch(/INVALID_REQUEST.*code: must be 8/);

    // Typed as a person may: lowercase, without the hyphen.
    await page.getByLabel('Pairing code').fill(code.replace('-', '').toLowerCase());
    await page.getByLabel('Name (optional)').fill('Front till');
    await page.getByLabel('Cohort (optional)').fill('cohort-front');
    await page.getByRole('button', { name: 'Claim' }).click();
    const heading = page.getByRole('heading', { level: 1, name: /^Fleet: t-\d+$/ });
    await heading.waitFor();
    terminalId = (await heading.textContent())!.replace('Fleet: ', '');
    // The POS credential, this once, on the new terminal's page.
    expect(await page.locator('pre.secret').textContent()).toMatch(
      new RegExp(`terminal_id ${terminalId}\\nusername +\\S+\\npassword +\\S+`),
    );
    await eventually(
      () => agent.output(),
      (output) => output.includes(`Paired: terminal ${terminalId}`),
      { ms: 20_000, what: 'the agent to be paired', context },
    );
    const facts = refreshed(page, '#fleet-facts');
    await expect.poll(facts, { timeout: 30_000 }).toContain('online');
    await expect.poll(facts, { timeout: 10_000 }).toContain(AGENT_VERSION);
    expect(await page.locator('#fleet-facts').textContent()).toContain(process.versions.node);
    expect(await page.locator('#fleet-facts').textContent()).toContain('Front till');

    // The Fleet page: the terminal's row, online, with its versions and its reader.
    await page.getByRole('link', { name: 'Fleet', exact: true }).click();
    const row = page.locator(`#fleet tr[data-terminal="${terminalId}"]`);
    await expect.poll(() => row.textContent()).toContain('online');
    const cells = await row.locator('td').allTextContents();
    expect(cells.slice(0, 5)).toEqual([
      `Front till (${terminalId})`,
      'cohort-front',
      AGENT_VERSION,
      process.versions.node,
      'native emulated native reader; firmware —',
    ]);
    expect(await checkBothWidths(page, 'fleet')).toEqual([]);

    // Its terminal layer: a value the configuration refuses, then one applied.
    await page.getByRole('link', { name: 'Configuration' }).click();
    await page.getByLabel('Layer', { exact: true }).selectOption('terminal');
    await page.getByLabel('Terminal', { exact: true }).selectOption(terminalId);
    expect(await page.getByLabel('Cohort', { exact: true }).isHidden()).toBe(true);
    await page.getByRole('button', { name: 'Open' }).click();
    const editor = page.getByLabel('Settings of this layer (JSON)');
    await page.getByRole('heading', { name: `Layer of terminal ${terminalId}` }).waitFor();
    await editor.fill('{"heartbeat_s": 0}');
    await page.getByRole('button', { name: 'Save' }).click();
    const refused = page.locator('#layer-problem');
    await expect.poll(() => refused.textContent()).toMatch(/INVALID_REQUEST.*heartbeat_s/);
    await editor.fill('{"idle_screen_text": "Welcome to the front till", "heartbeat_s": 10}');
    await page.getByRole('button', { name: 'Save' }).click();
    const configured = page.locator(`#config-terminals tr[data-terminal="${terminalId}"]`);
    await expect
      .poll(() => configured.textContent(), { timeout: 30_000 })
      .toMatch(/in sync.*Welcome to the front till/);
    expect(await refused.textContent()).toBe('');
    expect(await checkBothWidths(page, 'fleet-config')).toEqual([]);

    // The terminal's own view: in sync too, and a doctor answered by the running agent.
    await configured.getByRole('link', { name: terminalId }).click();
    await page.getByRole('heading', { level: 1, name: `Fleet: ${terminalId}` }).waitFor();
    await expect.poll(() => page.locator('#fleet-config-state').textContent()).toContain('in sync');
    await page.getByRole('button', { name: 'Run doctor' }).click();
    const output = page.locator('#diagnostics-output');
    await expect.poll(() => output.textContent(), { timeout: 20_000 }).toContain('[ok] broker');
    expect(await output.textContent()).toContain('[ok] configuration');
    await page.getByRole('button', { name: 'Close the day now' }).click();
    // The emulated native reader has no batch to close: it answers with a failed one.
    await expect
      .poll(() => page.getByRole('list', { name: 'End-of-day history' }).textContent(), {
        timeout: 15_000,
      })
      .toContain('failed (asked for, try 1)');
    expect(await checkBothWidths(page, 'fleet-terminal')).toEqual([]);
    await page.close();
  }, 120_000);

  it('shows the operator the same terminal for the account it picks, without payment data', async () => {
    expect(terminalId, 'the merchant’s test claimed the terminal').not.toBe('');

    const page = await browser.newPage({ viewport: DESKTOP });
    await page.goto(`${origin}/`);
    await signIn(page, OPERATOR);
    await page.getByRole('heading', { level: 1, name: 'Accounts' }).waitFor();
    await page.getByRole('link', { name: 'Fleet', exact: true }).click();
    await page.getByLabel('Account').selectOption(accountId);
    const row = page.locator(`#fleet tr[data-terminal="${terminalId}"]`);
    await expect.poll(() => row.textContent(), { timeout: 10_000 }).toContain('online');
    expect(await row.textContent()).toContain(AGENT_VERSION);
    expect(await row.textContent()).toContain('in sync');
    // The operator reads no terminal status: no local mode column.
    expect(await page.locator('#fleet thead th').allTextContents()).not.toContain('Local mode');
    expect(await checkBothWidths(page, 'fleet-operator')).toEqual([]);

    await row.getByRole('link', { name: `Front till (${terminalId})` }).click();
    await page.getByRole('heading', { level: 1, name: `Fleet: ${terminalId}` }).waitFor();
    await expect.poll(() => page.locator('#fleet-facts').textContent()).toContain('online');
    await page.getByRole('button', { name: 'Run doctor' }).click();
    await expect
      .poll(() => page.locator('#diagnostics-output').textContent(), { timeout: 20_000 })
      .toContain('[ok] broker');
    // No end-of-day totals (they are payment data) and no way to the payments.
    expect(await page.getByRole('heading', { name: 'End-of-day' }).count()).toBe(0);
    expect(await page.getByRole('link', { name: 'Payments and status' }).count()).toBe(0);
    expect(await checkBothWidths(page, 'fleet-terminal-operator')).toEqual([]);
    await page.close();
  }, 60_000);
});
