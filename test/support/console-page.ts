/**
 * What the console's browser tests share: Chromium (Debian's, driven by playwright-core),
 * signing in on the page, and the check every page passes: axe-core finds no serious or
 * critical violation, and a screenshot is saved to test-output/console/.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { repoRoot } from './tps-command.js';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** Whether the browser tests can run; when not, says why once. */
export const chromiumAvailable = existsSync(CHROMIUM);
if (!chromiumAvailable) {
  console.warn(
    `console browser tests skipped: no Chromium at ${CHROMIUM} ` +
      '(apt-get install chromium, or set CHROMIUM_PATH)',
  );
}

export const SHOTS = path.join(repoRoot, 'test-output', 'console');
export const DESKTOP = { width: 1280, height: 900 };
export const PHONE = { width: 390, height: 844 };

const axeSource = (createRequire(import.meta.url)('axe-core') as { source: string }).source;

/** axe-core in the page (evaluated by the driver, so the page's CSP stays as it is). */
export async function seriousViolations(page: Page, name: string): Promise<string[]> {
  mkdirSync(SHOTS, { recursive: true });
  await page.evaluate(axeSource);
  // A string: this file is compiled without the DOM's types; it runs in the page.
  const violations = (await page.evaluate(`(async () => {
    const result = await window.axe.run();
    return result.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => v.id + ' (' + v.impact + '): ' + v.help + ' at ' +
        JSON.stringify(v.nodes.map((n) => n.target)));
  })()`)) as string[];
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
  return violations;
}

/**
 * The page at desktop and at phone width: no serious violation at either, nothing wider
 * than the phone's screen; `name.png` and `name-390px.png`. Leaves the desktop width.
 */
export async function checkBothWidths(page: Page, name: string): Promise<string[]> {
  await page.setViewportSize(DESKTOP);
  const found = await seriousViolations(page, name);
  await page.setViewportSize(PHONE);
  const width = (await page.evaluate('document.documentElement.scrollWidth')) as number;
  if (width > PHONE.width) found.push(`${name}: ${width} px wide at ${PHONE.width} px`);
  found.push(...(await seriousViolations(page, `${name}-390px`)));
  await page.setViewportSize(DESKTOP);
  return found;
}

export async function signIn(page: Page, credential: { username: string; password: string }) {
  await page.getByLabel('Username').fill(credential.username);
  await page.getByLabel('Password').fill(credential.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
}
