/**
 * The console's release and rollout pages in Chromium, against `tps cloud` (with a release
 * key) and a real agent with its updater, as processes (docs/console.md). The operator
 * publishes from the page (a file that is no release, one signed with another key and a
 * version published twice refused, saying why), rolls a good release out to a merchant's
 * cohort and sees the terminal install it, then a release that fails its health check:
 * the agent rolls back, the rollout pauses with the agent's reason shown, and Resume ends
 * it. The merchant reads both rollouts, with no control. Each page is checked by axe-core
 * at desktop and phone widths and saved in test-output/console/.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsole } from '../bin/build-console.js';
import { generateReleaseKeyPair } from '../common/release-signature.js';
import { tempDir } from './agent-harness.js';
import { ARCH, buildRelease, startUpdatableTerminal } from './support/agent-releases.js';
import type { Supervisor } from './support/agent-releases.js';
import {
  CHROMIUM,
  DESKTOP,
  checkBothWidths,
  chromiumAvailable,
  signIn,
} from './support/console-page.js';
import { eventually, startRelayChild, type RelayChild } from './support/e2e-parts.js';
import { post, tempDataDir } from './support/relay.js';

const keys = generateReleaseKeyPair();
const COHORT = 'cohort-console';
const ACCOUNT = { username: 'console-rollout-account', password: 'console-rollout-account-pw' };
const OPERATOR = { username: 'console-rollout-operator', password: 'console-rollout-operator-pw' };

describe.skipIf(!chromiumAvailable)(`the console's release and rollout pages (${CHROMIUM})`, () => {
  const dir = tempDir('console-rollouts');
  let relay: RelayChild;
  let supervisor: Supervisor | undefined;
  let browser: Browser;
  let origin = '';
  let accountId = '';
  let terminalId = '';
  const archives: Record<string, string> = {};
  const context = () => `--- relay ---\n${relay.output()}`;

  /** Pairs an agent into the cohort as a field engineer would: code, claim, credential. */
  const pair = async () => {
    const secret = randomBytes(32).toString('base64url');
    const unauthenticated = async (operation: string, body: object) =>
      (await (
        await fetch(`${relay.baseUrl}/v1${operation}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
      ).json()) as Record<string, unknown>;
    const { code } = await unauthenticated('/pairing/start', {
      secret_sha256: createHash('sha256').update(secret).digest('hex'),
    });
    const claim = { code, name: 'till', cohort: COHORT };
    expect((await post(relay.baseUrl, 'v1', '/terminal/claim', claim, ACCOUNT)).status).toBe(200);
    return (await unauthenticated('/pairing/wait', { secret, wait_seconds: 0 })) as {
      terminal_id: string;
      broker: { url: string; username: string; password: string };
    };
  };

  beforeAll(async () => {
    const keyFile = path.join(dir, 'release-key.pem');
    fs.writeFileSync(keyFile, keys.publicKeyPem);
    await buildConsole();
    relay = await startRelayChild({
      TPS_DATA_DIR: tempDataDir(),
      TPS_ACCOUNT_USERNAME: ACCOUNT.username,
      TPS_ACCOUNT_PASSWORD: ACCOUNT.password,
      TPS_OPERATOR_USERNAME: OPERATOR.username,
      TPS_OPERATOR_PASSWORD: OPERATOR.password,
      TPS_DEFAULT_SIMULATOR: 'false',
      TPS_RELEASE_PUBLIC_KEY: keyFile,
    });
    origin = relay.baseUrl.replace(/\/pos$/, '');
    const accounts = await post(relay.baseUrl, 'v1', '/account/list', {}, OPERATOR);
    accountId = (accounts.body.accounts as Array<{ account_id: string; kind: string }>).find(
      (account) => account.kind === 'merchant',
    )!.account_id;
    const signed = { privateKeyPem: keys.privateKeyPem };
    const first = await buildRelease(dir, { version: '1.0.0', ...signed });
    archives.good = await buildRelease(dir, { version: '1.1.0', ...signed });
    archives.bad = await buildRelease(dir, { version: '1.2.0', ...signed, health: 'unhealthy' });
    archives.otherKey = await buildRelease(dir, {
      version: '1.3.0',
      privateKeyPem: generateReleaseKeyPair().privateKeyPem,
    });
    archives.notRelease = path.join(dir, 'notes.tar.gz');
    fs.writeFileSync(archives.notRelease, 'not an archive at all\n');

    const paired = await pair();
    terminalId = paired.terminal_id;
    ({ supervisor } = await startUpdatableTerminal({
      root: path.join(dir, 'till'),
      terminalId,
      broker: paired.broker,
      first: { archive: first, version: '1.0.0' },
      publicKeyPem: keys.publicKeyPem,
      relay: relay.baseUrl,
    }));
    await eventually(
      () => post(relay.baseUrl, 'v1', '/terminal/status', { terminal_id: terminalId }, ACCOUNT),
      (answer) => answer.body.status?.connected === true,
      { ms: 20_000, what: 'the agent to connect', context },
    );
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await supervisor?.stop();
    await relay?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** Publishes `archive` from the Releases page; answers what the page then says. */
  const publish = async (page: Page, archive: string) => {
    await page.getByLabel('Release archive').setInputFiles(archive);
    await page.getByRole('button', { name: 'Publish' }).click();
    const said = async () =>
      (await page.locator('#publish-problem, #publish-done').allTextContents()).join('');
    await expect.poll(said).toMatch(/^(?!Sending).+/);
    return said();
  };

  /** Starts a rollout of `version` to the cohort from the page; lands on its page. */
  const startRollout = async (page: Page, version: string) => {
    await page.locator('#nav').getByRole('link', { name: 'Rollouts' }).click();
    await page.getByRole('link', { name: 'Start a rollout' }).click();
    await page.getByRole('heading', { level: 1, name: 'Start a rollout' }).waitFor();
    await page.getByLabel('Account').selectOption(accountId);
    await page.getByLabel('Release').selectOption({ label: `${version} (${ARCH})` });
    await page.getByLabel('Cohort').fill(COHORT);
    await page.getByLabel('Deadline per wave (s)').fill('60');
    await page.getByRole('button', { name: 'Start' }).click();
    await page.getByRole('heading', { level: 1, name: /^Rollout ro-/ }).waitFor();
  };

  it('the operator publishes from the page, rolls out a good release and a bad one that rolls back and pauses, and resumes', async () => {
    const page = await browser.newPage({ viewport: DESKTOP });
    await page.goto(`${origin}/console/#/releases`);
    await signIn(page, OPERATOR);
    await page.getByRole('heading', { level: 1, name: 'Releases' }).waitFor();
    expect(await page.locator('#releases').textContent()).toBe('No release published yet.');

    expect(await publish(page, archives.notRelease!)).toMatch(
      /^Not published \(RELEASE_INVALID\): .*Choose the tps-agent-VERSION-ARCH\.tar\.gz/,
    );
    expect(await publish(page, archives.otherKey!)).toMatch(
      /^Not published \(RELEASE_SIGNATURE_INVALID\): .*TPS_RELEASE_PUBLIC_KEY/,
    );
    expect(await publish(page, archives.good!)).toMatch(/^Published 1\.1\.0 for /);
    expect(await publish(page, archives.good!)).toMatch(
      /^Not published \(RELEASE_EXISTS\): .*publish a new version/,
    );
    expect(await publish(page, archives.bad!)).toMatch(/^Published 1\.2\.0 for /);
    expect(await page.locator('#releases tbody td:first-child').allTextContents()).toEqual([
      '1.2.0',
      '1.1.0',
    ]);
    expect(await checkBothWidths(page, 'releases')).toEqual([]);

    // A good release: the cohort's one terminal installs it, and the rollout completes.
    await startRollout(page, '1.1.0');
    await page.getByRole('heading', { level: 2, name: 'Wave 1' }).waitFor();
    expect(await checkBothWidths(page, 'rollout-running')).toEqual([]);
    const facts = page.locator('#rollout-facts');
    const terminal = page.locator(`tr[data-terminal="${terminalId}"]`);
    await expect.poll(() => facts.textContent(), { timeout: 40_000 }).toMatch(/Statecompleted/);
    expect(await terminal.locator('td').nth(1).textContent()).toBe('installed');
    expect(await checkBothWidths(page, 'rollout')).toEqual([]);

    // A release that fails its health check: the agent rolls back by itself, the gate pauses.
    await startRollout(page, '1.2.0');
    await expect.poll(() => facts.textContent(), { timeout: 45_000 }).toMatch(/Statepaused/);
    expect(await page.locator('#rollout-paused-reason').textContent()).toMatch(
      new RegExp(`^Paused: wave 1: 1 of 1 failed .*${terminalId}: rolled_back: not healthy`),
    );
    expect(await terminal.locator('td').nth(1).textContent()).toMatch(
      /^rolled_back not healthy within 5 s/,
    );
    expect(await page.getByRole('button', { name: 'Pause' }).isDisabled()).toBe(true);
    expect(await checkBothWidths(page, 'rollout-paused')).toEqual([]);
    // Resumed, the wave is accepted as it stands: no terminal is left, so it completes.
    await page.getByRole('button', { name: 'Resume' }).click();
    await expect.poll(() => facts.textContent(), { timeout: 20_000 }).toMatch(/Statecompleted/);

    // The list: both, newest first.
    await page.getByRole('link', { name: 'Every rollout' }).click();
    await page.getByLabel('Account').selectOption(accountId);
    await expect
      .poll(() => page.locator('#rollouts tbody tr td:nth-child(3)').allTextContents())
      .toEqual([`1.2.0 (${ARCH})`, `1.1.0 (${ARCH})`]);
    expect(await checkBothWidths(page, 'rollouts')).toEqual([]);
    await page.getByRole('link', { name: 'Start a rollout' }).click();
    await page.getByRole('heading', { level: 1, name: 'Start a rollout' }).waitFor();
    expect(await checkBothWidths(page, 'rollout-start')).toEqual([]);
    await page.close();
  }, 150_000);

  it('the merchant reads the rollouts that reach it, with no control', async () => {
    const page = await browser.newPage({ viewport: DESKTOP });
    await page.goto(`${origin}/`);
    await signIn(page, ACCOUNT);
    await page.getByRole('heading', { level: 1, name: 'Terminals' }).waitFor();
    await page.locator('#nav').getByRole('link', { name: 'Rollouts' }).click();
    await page.getByRole('heading', { level: 1, name: 'Rollouts' }).waitFor();
    const rows = page.locator('#rollouts tbody tr');
    expect(await rows.count()).toBe(2);
    expect(await page.getByRole('link', { name: 'Start a rollout' }).count()).toBe(0);
    expect(await checkBothWidths(page, 'rollouts-merchant')).toEqual([]);
    await rows.first().getByRole('link').click();
    await page.getByRole('heading', { level: 1, name: /^Rollout ro-/ }).waitFor();
    expect(await page.locator('#rollout-facts').textContent()).toMatch(/Statecompleted/);
    expect(await page.getByRole('button', { name: /Pause|Resume/ }).count()).toBe(0);
    expect(await page.locator(`tr[data-terminal="${terminalId}"]`).textContent()).toContain(
      'rolled_back',
    );
    expect(await checkBothWidths(page, 'rollout-merchant')).toEqual([]);
    await page.close();
  }, 60_000);
});
