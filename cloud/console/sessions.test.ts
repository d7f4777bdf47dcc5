import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiError } from '../errors.js';
import { hashGeneratedSecret } from '../accounts/secrets.js';
import { SqliteStore } from '../store/sqlite.js';
import { ConsoleSessions, SESSION_TTL_MS, csrfMatches } from './sessions.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

async function setUp() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-sessions-'));
  dirs.push(dir);
  const store = new SqliteStore(path.join(dir, 'tps.db'));
  await store.createAccount({
    id: 'acct-1',
    kind: 'merchant',
    createdAt: new Date().toISOString(),
  });
  const put = (password: string, terminalId?: string) =>
    store.putCredential({
      username: 'pos',
      secretHash: hashGeneratedSecret(password),
      accountId: 'acct-1',
      ...(terminalId ? { terminalId } : {}),
      createdAt: new Date().toISOString(),
    });
  await put('first-password', 't-1900000001');
  let now = 1_000_000;
  const sessions = await ConsoleSessions.open(store, () => now);
  return { store, put, sessions, advance: (ms: number) => (now += ms) };
}

const code = (promise: Promise<unknown>) =>
  promise.then(
    () => 'OK',
    (error: unknown) => (error instanceof ApiError ? error.code : String(error)),
  );

describe('ConsoleSessions', () => {
  it("resolves to the credential's principal, with a CSRF token only it matches", async () => {
    const { sessions } = await setUp();
    const { cookie } = await sessions.issue('pos');
    const session = await sessions.resolve(cookie);
    expect(session.principal).toEqual({
      accountId: 'acct-1',
      username: 'pos',
      terminalId: 't-1900000001',
      role: 'terminal',
    });
    expect(csrfMatches(session, session.csrfToken)).toBe(true);
    expect(csrfMatches(session, 'x')).toBe(false);
    expect(csrfMatches(session, undefined)).toBe(false);
  });

  it('ends after its lifetime', async () => {
    const { sessions, advance } = await setUp();
    const { cookie } = await sessions.issue('pos');
    advance(SESSION_TTL_MS - 1);
    expect(await code(sessions.resolve(cookie))).toBe('OK');
    advance(1);
    expect(await code(sessions.resolve(cookie))).toBe('UNAUTHORIZED');
  });

  it("ends when the credential's secret changes, or on sign-out", async () => {
    const { sessions, put } = await setUp();
    const first = await sessions.issue('pos');
    const second = await sessions.issue('pos');
    sessions.signOut(second.cookie);
    expect(await code(sessions.resolve(second.cookie))).toBe('UNAUTHORIZED');
    expect(await code(sessions.resolve(first.cookie))).toBe('OK');
    await put('second-password', 't-1900000001');
    expect(await code(sessions.resolve(first.cookie))).toBe('UNAUTHORIZED');
  });

  it('refuses altered or foreign cookies, and is kept by a second opening of the store', async () => {
    const { sessions, store } = await setUp();
    const { cookie } = await sessions.issue('pos');
    const [payload, signature] = cookie.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as { e: number };
    const longer = Buffer.from(JSON.stringify({ ...claims, e: claims.e * 2 })).toString(
      'base64url',
    );
    for (const bad of [`${longer}.${signature}`, 'garbage', '', '.', `${payload}.`]) {
      expect(await code(sessions.resolve(bad)), bad).toBe('UNAUTHORIZED');
    }
    const reopened = await ConsoleSessions.open(store, () => 1_000_000);
    expect(await code(reopened.resolve(cookie))).toBe('OK');
  });
});
