/**
 * The console in a real browser: Debian's Chromium driven by playwright-core against
 * `tps cloud` started as a process, as a user runs it. Signs in, sees the default
 * simulated terminal online, pays 25.00 EUR from the Simulators page, watches the
 * transaction reach AWAITING_CONFIRM without a reload, confirms it and reads its receipt;
 * a wrong password is refused; a terminal credential sees its terminal alone; the page
 * keeps working across a restart of the relay. Each page is checked by axe-core (no
 * serious or critical violation) and saved as a screenshot in test-output/console/.
 */
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsole } from '../bin/build-console.js';
import {
  CHROMIUM,
  SHOTS,
  chromiumAvailable as available,
  checkBothWidths,
  signIn,
} from './support/console-page.js';
import { freePorts, startRelayChild, type RelayChild } from './support/e2e-parts.js';
import { basicAuth, tempDataDir } from './support/relay.js';

const ACCOUNT = { username: 'console-account', password: 'console-account-password' };
const OPERATOR = { username: 'console-operator', password: 'console-operator-password' };

const dataDir = tempDataDir();
let httpPort = 0;
let relay: RelayChild;
let origin = '';
let browser: Browser;
let simulator: { terminal_id: string; username: string; password: string };

async function startRelay(): Promise<RelayChild> {
  const started = await startRelayChild({
    TPS_PORT: String(httpPort),
    TPS_DATA_DIR: dataDir,
    TPS_ACCOUNT_USERNAME: ACCOUNT.username,
    TPS_ACCOUNT_PASSWORD: ACCOUNT.password,
    TPS_OPERATOR_USERNAME: OPERATOR.username,
    TPS_OPERATOR_PASSWORD: OPERATOR.password,
    TPS_SIMULATOR_DELAY_MS: '1500',
  });
  origin = started.baseUrl.replace(/\/pos$/, '');
  return started;
}

/** The default simulated terminal's credential, as the first start wrote it. */
function defaultSimulator() {
  const text = readFileSync(path.join(dataDir, 'first-start-credentials.txt'), 'utf8');
  const match =
    /Simulated terminal (\S+) \(credential[^\n]*\n\s+username (\S+)\n\s+password (\S+)/.exec(text);
  if (!match) throw new Error(`no simulator credential in:\n${text}`);
  return { terminal_id: match[1]!, username: match[2]!, password: match[3]! };
}

describe.skipIf(!available)(`the console in Chromium (${CHROMIUM})`, () => {
  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    await buildConsole();
    httpPort = (await freePorts(1))[0]!;
    relay = await startRelay();
    simulator = defaultSimulator();
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await relay?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('refuses a wrong password', async () => {
    const page = await browser.newPage();
    await page.goto(`${origin}/`);
    // With the keyboard alone: the username field has the focus, Tab, Enter.
    await page.getByLabel('Username').waitFor();
    expect(await page.evaluate('document.activeElement.id')).toBe('username');
    await page.keyboard.type(ACCOUNT.username);
    await page.keyboard.press('Tab');
    await page.keyboard.type('wrong-password');
    await page.keyboard.press('Enter');
    await expect
      .poll(() => page.locator('#sign-in-problem').textContent(), { timeout: 10_000 })
      .toContain('wrong username or password');
    expect(await page.locator('#nav').isHidden()).toBe(true);
    await page.close();
  }, 30_000);

  it('signs in, pays 25.00 EUR with the default simulator, watches it to AWAITING_CONFIRM live, confirms it and shows its receipt', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${origin}/`);
    await page.getByLabel('Username').waitFor();
    const loadMs = (await page.evaluate(`(() => {
      const [navigation] = performance.getEntriesByType('navigation');
      return navigation ? navigation.loadEventEnd - navigation.startTime : NaN;
    })()`)) as number;
    console.log(`console first page load: ${loadMs.toFixed(0)} ms (loopback, reported only)`);
    expect(await checkBothWidths(page, '01-sign-in')).toEqual([]);

    await signIn(page, ACCOUNT);
    const row = page.locator(`tr[data-terminal="${simulator.terminal_id}"]`);
    await expect.poll(() => row.textContent()).toContain('online');
    expect(await checkBothWidths(page, '02-terminals')).toEqual([]);

    // A mark on the window: a reload would wipe it.
    await page.evaluate('window.mark = 1');
    await page.getByRole('link', { name: 'Simulators' }).click();
    await page.getByLabel('Simulator', { exact: true }).selectOption(simulator.terminal_id);
    expect(await page.getByLabel('Amount', { exact: true }).inputValue()).toBe('25.00');
    expect(await page.getByLabel('Trigger amount').locator('option').allTextContents()).toContain(
      '1000.06 — Declined by the issuer',
    );
    expect(await checkBothWidths(page, '03-simulators')).toEqual([]);
    await page.getByRole('button', { name: 'Pay' }).click();

    const state = page.locator('#txn-state');
    await expect.poll(() => state.textContent(), { timeout: 15_000 }).toBe('AWAITING_CONFIRM');
    expect(await page.evaluate('window.mark')).toBe(1);
    await expect.poll(() => page.locator('#timeline').textContent()).toContain('AWAITING_CONFIRM');
    expect(await page.locator('#summary').textContent()).toContain('25.00 EUR');

    await page.getByRole('button', { name: 'Confirm success' }).click();
    await expect.poll(() => state.textContent()).toBe('CONFIRMED');
    const receipt = page.getByRole('figure').filter({ hasText: 'Customer receipt' });
    await expect.poll(() => receipt.locator('pre').textContent()).toMatch(/25[.,]00/);
    expect(await checkBothWidths(page, '04-transaction')).toEqual([]);
    await page.screenshot({
      path: path.join(SHOTS, 'readme.jpg'),
      type: 'jpeg',
      quality: 70,
      clip: { x: 0, y: 0, width: 1280, height: 760 },
    });

    for (const [link, name, heading] of [
      ['Transactions', '05-transactions', 'Transactions'],
      ['Events', '06-events', 'Events'],
      ['Webhooks', '07-webhooks', 'Webhooks'],
    ] as const) {
      await page.getByRole('link', { name: link, exact: true }).click();
      await page.getByRole('heading', { level: 1, name: heading }).waitFor();
      if (link === 'Transactions') await page.locator('#main table').first().waitFor();
      expect(await checkBothWidths(page, name)).toEqual([]);
    }
    await page.goto(`${origin}/console/#/terminal/${simulator.terminal_id}`);
    await page.getByRole('heading', { name: `Terminal ${simulator.terminal_id}` }).waitFor();
    await expect.poll(() => page.locator('#status').textContent()).toContain('online');
    expect(await checkBothWidths(page, '08-terminal')).toEqual([]);
    await page.close();
  }, 90_000);

  it('shows a terminal credential its own terminal alone', async () => {
    const created = await fetch(`${origin}/pos/v1/simulator/create`, {
      method: 'POST',
      headers: { authorization: basicAuth(ACCOUNT), 'content-type': 'application/json' },
      body: '{}',
    });
    expect(created.status).toBe(200);
    const other = (await created.json()) as { terminal_id: string };
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${origin}/`);
    await signIn(page, simulator);
    await page.locator(`tr[data-terminal="${simulator.terminal_id}"]`).waitFor();
    expect(await page.locator('#terminals tbody tr').count()).toBe(1);
    expect(await page.locator(`tr[data-terminal="${other.terminal_id}"]`).count()).toBe(0);
    await context.close();
  }, 30_000);

  it('pauses a payment when the customer is identified, and continues it from its page', async () => {
    const page = await browser.newPage();
    await page.goto(`${origin}/console/#/simulators`);
    await signIn(page, ACCOUNT);
    await page.getByRole('heading', { level: 1, name: 'Simulators' }).waitFor();
    await page.getByLabel('Simulator', { exact: true }).selectOption(simulator.terminal_id);
    await page.getByLabel('Trigger amount').selectOption('100002');
    await page.getByLabel('Pause when the customer is identified').check();
    await page.getByRole('button', { name: 'Pay' }).click();
    const state = page.locator('#txn-state');
    await expect.poll(() => state.textContent(), { timeout: 15_000 }).toBe('AWAITING_CONTINUE');
    await page.getByRole('button', { name: 'Continue' }).click();
    await expect.poll(() => state.textContent(), { timeout: 15_000 }).toBe('AWAITING_CONFIRM');
    expect(await page.locator('#summary').textContent()).toContain('1000.02 EUR');
    await page.close();
  }, 60_000);

  /** A purchase of 1000.02 (success at once) through the API, as the simulator's POS. */
  const payWithSimulator = async (externalId: string, waitSeconds: number) => {
    const paid = await fetch(`${origin}/pos/v1/transaction/purchase`, {
      method: 'POST',
      headers: { authorization: basicAuth(simulator), 'content-type': 'application/json' },
      body: JSON.stringify({
        terminal_id: simulator.terminal_id,
        external_id: externalId,
        requested_amount: 100002,
        currency: 'EUR',
        wait_seconds: waitSeconds,
      }),
    });
    expect(paid.status).toBe(200);
    return ((await paid.json()) as { transaction: { id: string; state: string } }).transaction;
  };

  /** Pays `trigger` with the default simulator from the Simulators page, to AWAITING_CONFIRM. */
  const payOnPage = async (page: Page, trigger: string) => {
    // The terminal may still be working on what a test before left it (a reversal takes
    // the simulator's 1.5 s): a new payment then is refused as busy.
    await expect
      .poll(
        async () => {
          const answer = await fetch(`${origin}/pos/v1/terminal/status`, {
            method: 'POST',
            headers: { authorization: basicAuth(simulator), 'content-type': 'application/json' },
            body: JSON.stringify({ terminal_id: simulator.terminal_id }),
          });
          return ((await answer.json()) as { status?: { transaction_state?: string } }).status
            ?.transaction_state;
        },
        { timeout: 30_000 },
      )
      .toBe('READY');
    await page.goto(`${origin}/console/#/simulators`);
    await signIn(page, ACCOUNT);
    await page.getByRole('heading', { level: 1, name: 'Simulators' }).waitFor();
    await page.getByLabel('Simulator', { exact: true }).selectOption(simulator.terminal_id);
    await page.getByLabel('Trigger amount').selectOption(trigger);
    await page.getByRole('button', { name: 'Pay' }).click();
    const state = page.locator('#txn-state');
    // The simulator answers in 1.5 s; a loaded machine may take far longer.
    await expect.poll(() => state.textContent(), { timeout: 30_000 }).toBe('AWAITING_CONFIRM');
    return state;
  };
  const resultShown = (page: Page) =>
    page.locator('#summary dt:has-text("Result") + dd').textContent();

  it('confirms a declined payment with its own result, not as ABORTED', async () => {
    const page = await browser.newPage();
    const state = await payOnPage(page, '100006');
    const declined = await resultShown(page);
    expect(declined).not.toBe('SUCCESS');
    expect(await page.getByRole('button', { name: /Reverse/ }).count()).toBe(0);
    await page.getByRole('button', { name: `Confirm the failure (${declined})` }).click();
    await expect.poll(() => state.textContent()).toBe('COMMITTED');
    expect(await resultShown(page)).toBe(declined);
    await page.close();
  }, 60_000);

  it('asks before reversing a successful payment, and says its receipts were printed before', async () => {
    const page = await browser.newPage();
    const state = await payOnPage(page, '100002');
    await page.getByRole('button', { name: 'Confirm success' }).click();
    await expect.poll(() => state.textContent()).toBe('CONFIRMED');
    // One click asks; nothing is sent until the question is answered.
    await page.getByRole('button', { name: 'Reverse payment…' }).click();
    const question = page.getByRole('group', { name: 'Reverse the payment?' });
    await expect.poll(() => question.textContent()).toContain('1000.02 EUR');
    await page.getByRole('button', { name: 'Keep the payment' }).click();
    expect(await question.isHidden()).toBe(true);
    expect(await state.textContent()).toBe('CONFIRMED');
    expect(await page.locator('#reversed-notice').count()).toBe(0);
    await page.getByRole('button', { name: 'Reverse payment…' }).click();
    await page.getByRole('button', { name: 'Reverse', exact: true }).click();
    await expect.poll(() => state.textContent()).toBe('COMMITTED');
    expect(await resultShown(page)).toBe('REVERSED_BY_MERCHANT');
    // The terminal's receipts still say approved: the page says they predate the reversal.
    expect(await page.getByRole('figure').first().textContent()).toContain('APPROVED');
    expect(await page.locator('#reversed-notice').textContent()).toContain('not charged');
    expect(await checkBothWidths(page, '10-reversed')).toEqual([]);
    await page.close();
  }, 60_000);

  it('says nothing of the last transaction after sign-out, and offers no test print for an unknown terminal', async () => {
    const page = await browser.newPage();
    await payOnPage(page, '100002');
    expect(await page.locator('#announce').textContent()).toContain('AWAITING_CONFIRM');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Username').waitFor();
    expect(await page.locator('#announce').textContent()).toBe('');

    await signIn(page, ACCOUNT);
    await page.goto(`${origin}/console/#/terminal/t-1999999999`);
    await page.getByRole('heading', { level: 1, name: 'Not available' }).waitFor();
    expect(await page.getByRole('alert').textContent()).toContain('t-1999999999');
    expect(await page.getByRole('button', { name: 'Send a test print' }).count()).toBe(0);
    await page.close();
  }, 60_000);

  it('lists all terminals’ transactions with their terminal, live, in the local time the picker takes', async () => {
    // Tokyo has no summer time: UTC+9 all year.
    const context = await browser.newContext({ timezoneId: 'Asia/Tokyo' });
    const page = await context.newPage();
    await page.goto(`${origin}/console/#/transactions`);
    await signIn(page, ACCOUNT);
    await page.locator('#main table').first().waitFor();
    expect(await page.locator('#main thead th').first().textContent()).toBe('Terminal');

    const externalId = `live-${Date.now()}`;
    const transaction = await payWithSimulator(externalId, 0);
    const row = page.locator(`tr[data-transaction="${transaction.id}"]`);
    // Appears without a search, and moves on as it changes.
    await expect.poll(() => row.textContent(), { timeout: 15_000 }).toContain('AWAITING_CONFIRM');
    expect(await row.locator('td').first().textContent()).toBe(simulator.terminal_id);
    const created = row.locator('time');
    const iso = (await created.getAttribute('datetime'))!;
    const tokyo = new Date(Date.parse(iso) + 9 * 3600_000).toISOString();
    expect(await created.textContent()).toBe(`${tokyo.slice(0, 10)} ${tokyo.slice(11, 19)}`);
    await context.close();
  }, 60_000);

  it('keeps the Events tail across visits, filtered as asked, newest first', async () => {
    const page = await browser.newPage();
    await page.goto(`${origin}/`);
    await signIn(page, ACCOUNT);
    await page.locator(`tr[data-terminal="${simulator.terminal_id}"]`).waitFor();
    // Made while another page is shown: the tail has it when it is opened.
    const externalId = `tail-${Date.now()}`;
    expect((await payWithSimulator(externalId, 10)).state).toBe('AWAITING_CONFIRM');
    const tail = page.locator('#tail');
    const openEvents = async () => {
      await page.getByRole('link', { name: 'Events', exact: true }).click();
      await page.getByRole('heading', { level: 1, name: 'Events' }).waitFor();
    };
    await openEvents();
    await expect.poll(() => tail.textContent()).toContain(`${externalId} AWAITING_CONFIRM`);
    const text = (await tail.textContent())!;
    // Newest first: AWAITING_CONFIRM above PROCESSING.
    expect(text.indexOf(`${externalId} AWAITING_CONFIRM`)).toBeLessThan(
      text.indexOf(`${externalId} PROCESSING`),
    );
    // Strictly by log position, newest first: the tail's transaction events of the
    // terminal are the relay's own list of them, in its order, reversed.
    const listed = await fetch(`${origin}/pos/v1/event/list`, {
      method: 'POST',
      headers: { authorization: basicAuth(ACCOUNT), 'content-type': 'application/json' },
      body: JSON.stringify({
        filter: { subject: { eq: simulator.terminal_id } },
        limit: 1000,
      }),
    });
    const inLog = (
      (await listed.json()) as {
        events: Array<{ data: { external_id?: string; state?: string } }>;
      }
    ).events
      .filter((event) => event.data.external_id !== undefined && event.data.state !== undefined)
      .map((event) => `${event.data.external_id} ${event.data.state}`);
    await page.getByLabel('Terminal', { exact: true }).fill(simulator.terminal_id);
    const inTail = (await tail.locator('li').allTextContents())
      .map((line) => /\bTransaction\b.* — (\S+ [A-Z_]+)/.exec(line)?.[1])
      .filter((pair): pair is string => pair !== undefined);
    expect(inTail.length).toBeGreaterThan(1);
    expect(inTail).toEqual(inLog.slice(-inTail.length).reverse());
    await page.getByRole('link', { name: 'Terminals' }).click();
    await openEvents();
    expect(await tail.textContent()).toContain(`${externalId} AWAITING_CONFIRM`);
    await page.getByLabel('Terminal', { exact: true }).fill('t-1999999999');
    expect(await tail.locator('li').count()).toBe(0);
    await page.getByLabel('Terminal', { exact: true }).fill('');
    expect(await tail.textContent()).toContain(externalId);
    await page.close();
  }, 60_000);

  it('shows the operator its accounts alone: creates one, its credential once, disables and enables it', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${origin}/`);
    await signIn(page, OPERATOR);
    await page.getByRole('heading', { level: 1, name: 'Accounts' }).waitFor();
    // No page of a merchant's payments: the navigation holds Accounts, the fleet, releases
    // and rollouts alone, and no live feed of events runs (the operator reads none).
    expect(await page.locator('#nav a').allTextContents()).toEqual([
      'Accounts',
      'Fleet',
      'Releases',
      'Rollouts',
    ]);
    expect(await page.locator('#connection').isHidden()).toBe(true);
    await page.getByLabel('Name').fill('Cafe Nord');
    await page.getByRole('button', { name: 'Create' }).click();
    const secret = page.locator('pre.secret');
    await expect.poll(() => secret.textContent()).toMatch(/password\s+\S+/);
    const text = (await secret.textContent())!;
    const merchant = {
      username: /username\s+(\S+)/.exec(text)![1]!,
      password: /password\s+(\S+)/.exec(text)![1]!,
    };
    const accountId = /account_id\s+(\S+)/.exec(text)![1]!;
    const row = page.locator(`tr[data-account="${accountId}"]`);
    await expect.poll(() => row.textContent()).toContain('enabled');
    expect(await checkBothWidths(page, '11-accounts')).toEqual([]);

    await page.getByRole('button', { name: 'Disable Cafe Nord' }).click();
    await expect.poll(() => row.textContent()).toContain('disabled since');
    // The merchant is refused while disabled, and signs in once enabled.
    const merchantPage = await browser.newPage();
    await merchantPage.goto(`${origin}/`);
    await signIn(merchantPage, merchant);
    await expect
      .poll(() => merchantPage.locator('#sign-in-problem').textContent())
      .toContain('this account is disabled');
    await page.getByRole('button', { name: 'Enable Cafe Nord' }).click();
    await expect.poll(() => row.textContent()).toContain('enabled');
    await signIn(merchantPage, merchant);
    await merchantPage.getByRole('heading', { level: 1, name: 'Terminals' }).waitFor();
    expect(await merchantPage.locator('#nav a').allTextContents()).toContain('Transactions');
    await merchantPage.close();
    await context.close();
  }, 60_000);

  it("closes a terminal's day from its page and shows the settlement live", async () => {
    const page = await browser.newPage();
    await page.goto(`${origin}/console/#/terminal/${simulator.terminal_id}`);
    await signIn(page, ACCOUNT);
    await page.getByRole('heading', { level: 2, name: 'End-of-day' }).waitFor();
    const history = page.getByRole('list', { name: 'End-of-day history' });
    await expect.poll(() => history.textContent(), { timeout: 10_000 }).toContain('None yet.');
    await page.getByRole('button', { name: 'Close the day now' }).click();
    // The simulated native reader has no batch to close: it answers with a failed one.
    await expect
      .poll(() => history.textContent(), { timeout: 15_000 })
      .toContain("failed (asked for, try 1): This terminal's card reader has no end-of-day");
    expect(await checkBothWidths(page, 'terminal-end-of-day')).toEqual([]);
    await page.close();
  }, 60_000);

  it('keeps working after the relay restarts, signed in, live again; meanwhile no terminal shown online', async () => {
    const page = await browser.newPage();
    await page.goto(`${origin}/`);
    await signIn(page, ACCOUNT);
    await page.locator('#connection').waitFor({ timeout: 10_000 });
    await expect.poll(() => page.locator('#connection').textContent()).toBe('live');

    const row = page.locator(`tr[data-terminal="${simulator.terminal_id}"]`);
    await expect.poll(() => row.textContent()).toContain('online');

    await relay.stop();
    await expect
      .poll(() => page.locator('#connection').textContent(), { timeout: 15_000 })
      .toBe('reconnecting…');
    // With the relay lost, no terminal is shown online: no one can tell.
    expect(await row.textContent()).not.toContain('online');
    expect(await row.textContent()).toContain('unknown');
    relay = await startRelay();
    await expect
      .poll(() => page.locator('#connection').textContent(), { timeout: 20_000 })
      .toBe('live');
    await expect.poll(() => row.textContent(), { timeout: 20_000 }).toContain('online');

    // Still signed in, and the pages answer: pay again and watch it live.
    await page.getByRole('link', { name: 'Simulators' }).click();
    await page.getByLabel('Simulator', { exact: true }).selectOption(simulator.terminal_id);
    await page.getByRole('button', { name: 'Pay' }).click();
    await expect
      .poll(() => page.locator('#txn-state').textContent(), { timeout: 15_000 })
      .toBe('AWAITING_CONFIRM');
    await page.close();
  }, 90_000);

  it("updates a terminal's row as its status events arrive, without a reload", async () => {
    const page = await browser.newPage();
    await page.goto(`${origin}/`);
    await signIn(page, ACCOUNT);
    const row = page.locator(`tr[data-terminal="${simulator.terminal_id}"]`);
    await expect.poll(() => row.textContent(), { timeout: 10_000 }).toContain('READY');
    await page.evaluate('window.mark = 1');
    // A slow payment (success after 30 s), started by a POS, not by the page.
    const started = await fetch(`${origin}/pos/v1/transaction/purchase`, {
      method: 'POST',
      headers: { authorization: basicAuth(simulator), 'content-type': 'application/json' },
      body: JSON.stringify({
        terminal_id: simulator.terminal_id,
        external_id: 'slow-1',
        requested_amount: 100020,
        currency: 'EUR',
        wait_seconds: 0,
      }),
    });
    expect(started.status).toBe(200);
    await expect.poll(() => row.textContent(), { timeout: 10_000 }).not.toContain('READY');
    expect(await page.evaluate('window.mark')).toBe(1);
    await page.close();
  }, 60_000);

  it('shows the screen text the terminal shows now, not the one of the state before', async () => {
    // A terminal of its own: the default one may still run the slow payment of the test before.
    const created = await fetch(`${origin}/pos/v1/simulator/create`, {
      method: 'POST',
      headers: { authorization: basicAuth(ACCOUNT), 'content-type': 'application/json' },
      body: '{}',
    });
    const terminal = (await created.json()) as {
      terminal_id: string;
      username: string;
      password: string;
    };
    const call = async (operation: string, body: object) =>
      (await fetch(`${origin}/pos/v1${operation}`, {
        method: 'POST',
        headers: { authorization: basicAuth(terminal), 'content-type': 'application/json' },
        body: JSON.stringify({ terminal_id: terminal.terminal_id, ...body }),
      }).then((r) => r.json())) as {
        transaction?: { state: string };
        status?: { screen_message?: string; transaction_state: string };
      };
    const page = await browser.newPage();
    await page.goto(`${origin}/`);
    await signIn(page, ACCOUNT);
    const row = page.locator(`tr[data-terminal="${terminal.terminal_id}"]`);
    await expect.poll(() => row.textContent(), { timeout: 10_000 }).toContain('READY');
    const paid = await call('/transaction/purchase', {
      external_id: `screen-${Date.now()}`,
      requested_amount: 1000,
      currency: 'EUR',
      wait_seconds: 10,
    });
    expect(paid.transaction?.state).toBe('AWAITING_CONFIRM');
    // The agent sends the new state at once and the reader's screen text, which the reader
    // may show just after its answer, in a status of its own: both the relay's status and
    // the row, fed by the status events, settle on what the terminal shows now.
    await expect
      .poll(
        async () => {
          const status = (await call('/terminal/status', {})).status;
          return `${status?.transaction_state}: ${status?.screen_message}`;
        },
        { timeout: 5_000 },
      )
      .toBe('READY: Approved');
    await expect
      .poll(() => row.locator('td').allTextContents(), { timeout: 5_000 })
      .toContain('Approved');
    await page.close();
  }, 60_000);
});
