/**
 * The console as the relay serves it, over real HTTP: `/` leads to it, its built assets
 * come with strict security headers and fit the size budget, sign-in takes the API's
 * credentials under the API's throttle, and the session cookie reaches exactly what that
 * credential's Basic auth reaches, only with the session's CSRF header.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsole } from '../bin/build-console.js';
import { TEST_ACCOUNT, post, startTestRelay, type TestRelay } from './support/relay.js';

const BUNDLE_BUDGET_GZIP = 200 * 1024;

let relay: TestRelay;
let origin: string;
let assetsDir: string;

beforeAll(async () => {
  assetsDir = await buildConsole();
  relay = await startTestRelay({ signInFailuresPerUserSource: 3 });
  origin = relay.baseUrl.replace(/\/pos$/, '');
}, 60_000);
afterAll(async () => relay?.close());

async function signIn(username: string, password: string) {
  const response = await fetch(`${origin}/console/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username, password }),
  });
  const body = (await response.json()) as Record<string, string>;
  const setCookie = response.headers.get('set-cookie') ?? '';
  return {
    status: response.status,
    body,
    setCookie,
    cookie: setCookie.split(';')[0] ?? '',
    challenge: response.headers.get('www-authenticate'),
  };
}

function callWithSession(
  operation: string,
  body: unknown,
  session: { cookie: string; csrf?: string },
) {
  return fetch(`${origin}/pos/v1${operation}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      cookie: session.cookie,
      ...(session.csrf ? { 'x-tps-csrf': session.csrf } : {}),
    },
    body: JSON.stringify(body),
  });
}

describe('the console is served by the relay', () => {
  it('redirects / to the console page', async () => {
    const response = await fetch(`${origin}/`, { redirect: 'manual' });
    expect(response.status).toBe(302);
    expect(response.headers.get('location')).toBe('/console/');
  });

  it('serves the page and its assets with a strict policy: our script only, never framed', async () => {
    for (const [file, type] of [
      ['', 'text/html'],
      ['app.js', 'text/javascript'],
      ['style.css', 'text/css'],
    ] as const) {
      const response = await fetch(`${origin}/console/${file}`);
      expect(response.status, file).toBe(200);
      expect(response.headers.get('content-type')).toContain(type);
      const csp = response.headers.get('content-security-policy') ?? '';
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain('unsafe-inline');
      expect(csp).not.toContain('unsafe-eval');
      expect(response.headers.get('x-frame-options')).toBe('DENY');
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
    }
  });

  it('loads nothing from outside the relay', async () => {
    const html = await (await fetch(`${origin}/console/`)).text();
    const references = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
    expect(references.length).toBeGreaterThan(0);
    for (const reference of references) expect(reference).toMatch(/^(\/console\/|#|data:,$)/);
    expect(html).not.toMatch(/<script>|<style>|\sstyle=|\son[a-z]+=/i);
    const script = readFileSync(path.join(assetsDir, 'app.js'), 'utf8');
    expect(script).not.toMatch(/https?:\/\/[a-z0-9]/i);
  });

  it('keeps the built script and stylesheet within 200 KB gzipped', () => {
    const size = ['app.js', 'style.css', 'index.html']
      .map((file) => gzipSync(readFileSync(path.join(assetsDir, file))).length)
      .reduce((a, b) => a + b, 0);
    console.log(`console assets: ${(size / 1024).toFixed(1)} KB gzipped`);
    expect(size).toBeLessThanOrEqual(BUNDLE_BUDGET_GZIP);
  });
});

describe('console sessions', () => {
  it('refuses a wrong password, and sets no cookie', async () => {
    const answer = await signIn(TEST_ACCOUNT.username, 'not-the-password');
    expect(answer.status).toBe(401);
    expect(answer.body).toMatchObject({ error: { code: 'UNAUTHORIZED' } });
    expect(answer.setCookie).toBe('');
    // No Basic challenge: a browser would open its own password dialog over the page.
    expect(answer.challenge).toBeNull();
  });

  it('throttles sign-ins like the API: over the limit, 429 with Retry-After, even for the right password', async () => {
    const username = 'someone-else';
    for (let i = 0; i < 3; i++) expect((await signIn(username, `guess-${i}`)).status).toBe(401);
    const refused = await fetch(`${origin}/console/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username, password: 'guess-4' }),
    });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('issues an HttpOnly, SameSite=Strict cookie that reaches the API only with the CSRF header', async () => {
    const session = await signIn(TEST_ACCOUNT.username, TEST_ACCOUNT.password);
    expect(session.status).toBe(200);
    expect(session.setCookie).toMatch(/HttpOnly/);
    expect(session.setCookie).toMatch(/SameSite=Strict/);
    expect(session.setCookie).toMatch(/Max-Age=28800/);
    // Plain HTTP on loopback: a Secure cookie would never come back.
    expect(session.setCookie).not.toMatch(/Secure/);
    expect(session.body.csrf_token).toBeTruthy();

    const withoutToken = await callWithSession('/terminal/list', {}, { cookie: session.cookie });
    expect(withoutToken.status).toBe(403);
    const wrongToken = await callWithSession(
      '/terminal/list',
      {},
      {
        cookie: session.cookie,
        csrf: 'forged',
      },
    );
    expect(wrongToken.status).toBe(403);
    const forged = await callWithSession(
      '/terminal/list',
      {},
      {
        cookie: `tps_console=${session.cookie.split('=')[1]!.replace(/.$/, 'x')}`,
        csrf: session.body.csrf_token!,
      },
    );
    expect(forged.status).toBe(401);
    const allowed = await callWithSession(
      '/terminal/list',
      {},
      {
        cookie: session.cookie,
        csrf: session.body.csrf_token!,
      },
    );
    expect(allowed.status).toBe(200);
  });

  it('resolves to the principal Basic auth would: a terminal credential reaches its terminal alone', async () => {
    const mine = await relay.newSimulator();
    const other = await relay.newSimulator();
    const account = await signIn(TEST_ACCOUNT.username, TEST_ACCOUNT.password);
    const terminal = await signIn(mine.username, mine.password);
    expect(terminal.body.terminal_id).toBe(mine.terminal_id);

    const listed = async (s: typeof account) =>
      (
        (await (
          await callWithSession(
            '/terminal/list',
            {},
            { cookie: s.cookie, csrf: s.body.csrf_token! },
          )
        ).json()) as { terminals: Array<{ terminal_id: string }> }
      ).terminals.map((t) => t.terminal_id);
    expect(await listed(account)).toEqual(
      expect.arrayContaining([mine.terminal_id, other.terminal_id]),
    );
    expect(await listed(terminal)).toEqual([mine.terminal_id]);

    // The same answers as Basic auth with the same credentials.
    const basic = await post(relay.baseUrl, 'v1', '/terminal/list', {}, mine);
    expect(basic.body.terminals.map((t: { terminal_id: string }) => t.terminal_id)).toEqual([
      mine.terminal_id,
    ]);
    const byCookie = await callWithSession(
      '/terminal/status',
      { terminal_id: other.terminal_id },
      {
        cookie: terminal.cookie,
        csrf: terminal.body.csrf_token!,
      },
    );
    const byBasic = await post(
      relay.baseUrl,
      'v1',
      '/terminal/status',
      { terminal_id: other.terminal_id },
      mine,
    );
    expect(byCookie.status).toBe(byBasic.status);
    expect(await byCookie.json()).toEqual(byBasic.body);
    // A terminal credential cannot create simulators from the console either.
    const create = await callWithSession(
      '/simulator/create',
      {},
      {
        cookie: terminal.cookie,
        csrf: terminal.body.csrf_token!,
      },
    );
    expect(create.status).toBe(403);
  });

  it("refuses the console's call without its cookie with no Basic challenge", async () => {
    const response = await fetch(`${origin}/pos/v1/terminal/list`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-tps-csrf': 'anything' },
      body: '{}',
    });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBeNull();
  });

  it('answers the session to the page, and ends it on sign-out', async () => {
    const session = await signIn(TEST_ACCOUNT.username, TEST_ACCOUNT.password);
    const current = await fetch(`${origin}/console/session`, {
      headers: { cookie: session.cookie },
    });
    expect(current.status).toBe(200);
    expect(await current.json()).toMatchObject({ username: TEST_ACCOUNT.username });

    const refusedOut = await fetch(`${origin}/console/session/end`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: session.cookie },
      body: '{}',
    });
    expect(refusedOut.status).toBe(403);
    const out = await fetch(`${origin}/console/session/end`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        cookie: session.cookie,
        'x-tps-csrf': session.body.csrf_token!,
      },
      body: '{}',
    });
    expect(out.status).toBe(200);
    expect(out.headers.get('set-cookie')).toMatch(/Max-Age=0/);
    const after = await callWithSession(
      '/terminal/list',
      {},
      {
        cookie: session.cookie,
        csrf: session.body.csrf_token!,
      },
    );
    expect(after.status).toBe(401);
  });

  it('refuses a malformed sign-in body with 400, never 500', async () => {
    for (const body of ['{}', '{"username": 5}', '[]', 'null']) {
      const response = await fetch(`${origin}/console/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      expect(response.status, body).toBe(400);
    }
  });
});
