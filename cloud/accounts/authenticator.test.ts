import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ApiError } from '../errors.js';
import { SqliteStore } from '../store/sqlite.js';
import { Authenticator, CREDENTIAL_TTL_MS } from './authenticator.js';
import { hashGeneratedSecret } from './secrets.js';

const basic = (username: string, password: string) =>
  `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

async function storeWithAccount() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-auth-'));
  dirs.push(dir);
  const store = new SqliteStore(path.join(dir, 'tps.db'));
  await store.createAccount({
    id: 'acct-1',
    kind: 'merchant',
    createdAt: new Date().toISOString(),
  });
  const put = (password: string) =>
    store.putCredential({
      username: 'pos',
      secretHash: hashGeneratedSecret(password),
      accountId: 'acct-1',
      createdAt: new Date().toISOString(),
    });
  await put('first-password');
  return { store, put };
}

const code = (promise: Promise<unknown>) =>
  promise.then(
    () => 'OK',
    (error: unknown) => (error instanceof ApiError ? error.code : String(error)),
  );

describe('Authenticator', () => {
  it('takes a changed password from the store once the credential it read has aged', async () => {
    const { store, put } = await storeWithAccount();
    let now = 0;
    const auth = new Authenticator(store, () => now);
    expect(await auth.authenticate(basic('pos', 'first-password'))).toEqual({
      username: 'pos',
      accountId: 'acct-1',
      role: 'account',
    });
    await put('second-password');
    // Within the time a read credential is used, the store is not asked again.
    now = CREDENTIAL_TTL_MS - 1;
    expect(await code(auth.authenticate(basic('pos', 'first-password')))).toBe('OK');
    now = CREDENTIAL_TTL_MS;
    expect(await code(auth.authenticate(basic('pos', 'first-password')))).toBe('UNAUTHORIZED');
    expect(await code(auth.authenticate(basic('pos', 'second-password')))).toBe('OK');
    await store.close();
  });

  it('finds a credential created after a miss at once, and refuses wrong ones', async () => {
    const { store } = await storeWithAccount();
    const auth = new Authenticator(store, () => 0);
    expect(await code(auth.authenticate(basic('late', 'late-password')))).toBe('UNAUTHORIZED');
    await store.putCredential({
      username: 'late',
      secretHash: hashGeneratedSecret('late-password'),
      accountId: 'acct-1',
      createdAt: new Date().toISOString(),
    });
    expect(await code(auth.authenticate(basic('late', 'late-password')))).toBe('OK');
    expect(await code(auth.authenticate(basic('late', 'wrong')))).toBe('UNAUTHORIZED');
    expect(await code(auth.authenticate(undefined))).toBe('UNAUTHORIZED');
    await store.close();
  });

  it('refuses a credential deleted from the store once told to forget it, within the time it is kept', async () => {
    const { store } = await storeWithAccount();
    const auth = new Authenticator(store, () => 0);
    await auth.authenticate(basic('pos', 'first-password'));
    await store.deleteCredential('pos');
    // Remembered: the store is not read again within CREDENTIAL_TTL_MS.
    expect(await code(auth.authenticate(basic('pos', 'first-password')))).toBe('OK');
    auth.forget('pos');
    expect(await code(auth.authenticate(basic('pos', 'first-password')))).toBe('UNAUTHORIZED');
    await store.close();
  });
});
