import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { hashGeneratedSecret } from '../../common/generated-secret.js';
import { VerifierAuthenticator } from './authenticator.js';
import { LOCAL_CREDENTIALS_FILE, LocalCredentials } from './credentials.js';

const logger = pino({ level: 'silent' });
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function dataDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'tps-local-credentials-'));
  dirs.push(dir);
  return dir;
}
const basic = (username: string, password: string) =>
  `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;

describe('POS credential verifiers on the agent', () => {
  it('keeps the newest set, on disk for the owner alone, and ignores an older one', async () => {
    const dir = dataDir();
    const credentials = LocalCredentials.open(dir, logger);
    const auth = new VerifierAuthenticator(credentials);
    expect(await auth.check(basic('pos-1', 'first-secret'), '10.0.0.5')).toEqual({
      ok: false,
      status: 401,
    });

    const first = { username: 'pos-1', verifier: hashGeneratedSecret('first-secret') };
    expect(credentials.received({ revision: 3, credentials: [first] })).toBe('kept');
    expect(await auth.check(basic('pos-1', 'first-secret'), '10.0.0.5')).toEqual({
      ok: true,
      username: 'pos-1',
    });
    expect(statSync(path.join(dir, LOCAL_CREDENTIALS_FILE)).mode & 0o777).toBe(0o600);

    // Rotated: the old secret no longer signs in.
    const rotated = { username: 'pos-1', verifier: hashGeneratedSecret('second-secret') };
    expect(credentials.received({ revision: 4, credentials: [rotated] })).toBe('kept');
    expect((await auth.check(basic('pos-1', 'first-secret'), '10.0.0.5')).ok).toBe(false);
    expect((await auth.check(basic('pos-1', 'second-secret'), '10.0.0.5')).ok).toBe(true);

    // Revoked; the set of revision 3 delivered again changes nothing.
    expect(credentials.received({ revision: 5, credentials: [] })).toBe('kept');
    expect(credentials.received({ revision: 3, credentials: [first] })).toBe('older');
    expect((await auth.check(basic('pos-1', 'first-secret'), '10.0.0.5')).ok).toBe(false);
    expect((await auth.check(basic('pos-1', 'second-secret'), '10.0.0.5')).ok).toBe(false);

    // A restart keeps revision 5 and its (empty) set.
    const reopened = LocalCredentials.open(dir, logger);
    expect(reopened.revision).toBe(5);
    expect(reopened.received({ revision: 4, credentials: [rotated] })).toBe('older');
  });

  it('takes no password, no other verifier kind and no malformed set', () => {
    const credentials = LocalCredentials.open(dataDir(), logger);
    for (const verifier of [
      'first-secret',
      'pbkdf2-sha256$600000$c2FsdA==$a2V5',
      `${hashGeneratedSecret('x')}$extra`,
    ]) {
      expect(
        credentials.received({ revision: 1, credentials: [{ username: 'a', verifier }] }),
      ).toBe('invalid');
    }
    expect(credentials.received({ revision: -1, credentials: [] })).toBe('invalid');
    expect(credentials.revision).toBeUndefined();
  });

  it('refuses malformed Authorization headers with 401', async () => {
    const credentials = LocalCredentials.open(dataDir(), logger);
    credentials.received({
      revision: 1,
      credentials: [{ username: 'pos-1', verifier: hashGeneratedSecret('s') }],
    });
    const auth = new VerifierAuthenticator(credentials);
    for (const header of [
      undefined,
      '',
      'Bearer abc',
      `Basic ${Buffer.from('no-colon').toString('base64')}`,
      `Basic ${Buffer.from(':s').toString('base64')}`,
      'Basic !!!',
    ]) {
      expect(await auth.check(header, '10.0.0.5'), String(header)).toEqual({
        ok: false,
        status: 401,
      });
    }
    expect((await auth.check(basic('pos-1', 's'), '10.0.0.5')).ok).toBe(true);
  });

  it('answers 429 with the wait after repeated failures, per address and per username', async () => {
    const credentials = LocalCredentials.open(dataDir(), logger);
    credentials.received({
      revision: 1,
      credentials: [{ username: 'pos-1', verifier: hashGeneratedSecret('right') }],
    });
    let now = 1_000_000;
    const auth = new VerifierAuthenticator(credentials, {
      limits: { windowMs: 60_000, perUserSource: 3, perSource: 5, perUser: 100 },
      now: () => now,
    });
    for (let i = 0; i < 3; i++) {
      expect(await auth.check(basic('pos-1', 'wrong'), '10.0.0.9')).toMatchObject({ status: 401 });
    }
    // Refused before the secret is checked: the right one is refused too, until the window ends.
    expect(await auth.check(basic('pos-1', 'right'), '10.0.0.9')).toEqual({
      ok: false,
      status: 429,
      retryAfterSeconds: 60,
    });
    // Another address is not held back by this one's guesses.
    expect((await auth.check(basic('pos-1', 'right'), '10.0.0.10')).ok).toBe(true);
    // Spraying usernames from one address meets the per-address limit.
    expect(await auth.check(basic('other-1', 'x'), '10.0.0.11')).toMatchObject({ status: 401 });
    expect(await auth.check(basic('other-2', 'x'), '10.0.0.11')).toMatchObject({ status: 401 });
    expect(await auth.check(basic('other-3', 'x'), '10.0.0.11')).toMatchObject({ status: 401 });
    expect(await auth.check(basic('other-4', 'x'), '10.0.0.11')).toMatchObject({ status: 401 });
    expect(await auth.check(basic('other-5', 'x'), '10.0.0.11')).toMatchObject({ status: 401 });
    expect(await auth.check(basic('pos-1', 'right'), '10.0.0.11')).toMatchObject({ status: 429 });
    now += 60_000;
    expect((await auth.check(basic('pos-1', 'right'), '10.0.0.9')).ok).toBe(true);
  });
});
