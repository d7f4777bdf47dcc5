/**
 * Claims of pairing codes, one table of cases run through both ways of signing in: HTTP
 * Basic, and a console session (cookie and CSRF header). Both must give the same
 * principal: the claim records the claimer's username, failed claims count against the
 * credential that made them (and its account, all its credentials together), and a
 * credential cannot revoke itself. Failed claims are counted before the store is asked,
 * so a burst of concurrent claims tries no more codes than the limit.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashGeneratedSecret } from '../cloud/accounts/secrets.js';
import { newPairingCode } from '../cloud/pairing/codes.js';
import { post, startTestRelay, type ApiResponse, type TestRelay } from './support/relay.js';

/** Failed claims per credential and per account (the defaults). */
const PER_CREDENTIAL = 10;
const PER_ACCOUNT = 20;

type Call = (operation: string, body: unknown) => Promise<ApiResponse>;
interface Credential {
  username: string;
  call: Call;
}

let relay: TestRelay;
let origin: string;
let accounts = 0;
/** Codes the store was asked to claim. */
let lookups = 0;

beforeAll(async () => {
  relay = await startTestRelay();
  origin = relay.baseUrl.replace(/\/pos$/, '');
  // Counted, and as slow as a database across a network: the claims of a burst overlap.
  const claimPairing = relay.store.claimPairing.bind(relay.store);
  relay.store.claimPairing = async (...args) => {
    lookups++;
    await new Promise((resolve) => setTimeout(resolve, 100));
    return claimPairing(...args);
  };
});
afterAll(async () => {
  await relay.close();
  fs.rmSync(relay.dataDir, { recursive: true, force: true });
});

const byBasic = async (username: string, password: string): Promise<Call> => {
  return (operation, body) => post(relay.baseUrl, 'v1', operation, body, { username, password });
};

const byConsole = async (username: string, password: string): Promise<Call> => {
  const signedIn = await fetch(`${origin}/console/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username, password }),
  });
  expect(signedIn.status).toBe(200);
  const cookie = (signedIn.headers.get('set-cookie') ?? '').split(';')[0]!;
  const { csrf_token: csrf } = (await signedIn.json()) as { csrf_token: string };
  return async (operation, body) => {
    const response = await fetch(`${relay.baseUrl}/v1${operation}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie, 'x-tps-csrf': csrf },
      body: JSON.stringify(body),
    });
    return { status: response.status, headers: response.headers, body: await response.json() };
  };
};

/** A fresh account with three account credentials, each signed in the way given. */
async function freshAccount(signIn: typeof byBasic): Promise<Credential[]> {
  const accountId = `acct-claims-${++accounts}`;
  const at = new Date().toISOString();
  await relay.store.createAccount({ id: accountId, kind: 'merchant', createdAt: at });
  const credentials: Credential[] = [];
  for (const name of ['a', 'b', 'c']) {
    const username = `${accountId}-${name}`;
    const password = randomBytes(18).toString('base64url');
    await relay.store.putCredential({
      username,
      secretHash: hashGeneratedSecret(password),
      accountId,
      createdAt: at,
    });
    credentials.push({ username, call: await signIn(username, password) });
  }
  return credentials;
}

async function startPairing(): Promise<string> {
  const secret = randomBytes(32).toString('base64url');
  const response = await fetch(`${relay.baseUrl}/v1/pairing/start`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ secret_sha256: createHash('sha256').update(secret).digest('hex') }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { code: string }).code;
}

/**
 * Claims `n` random codes at once; answers how many were tried (404, each one a store
 * lookup) and refused (429).
 */
async function guess(credential: Credential, n: number) {
  const lookupsBefore = lookups;
  const answers = await Promise.all(
    Array.from({ length: n }, () => credential.call('/terminal/claim', { code: newPairingCode() })),
  );
  const codes = answers.map((a) => a.status === 404 && a.body.error.code);
  const tried = codes.filter((c) => c === 'PAIRING_NOT_FOUND').length;
  const refused = answers.filter((a) => a.status === 429).length;
  for (const a of answers.filter((a) => a.status === 429)) {
    expect(Number(a.headers.get('retry-after'))).toBeGreaterThan(0);
  }
  expect(tried + refused).toBe(n);
  expect(lookups - lookupsBefore).toBe(tried);
  return { tried, refused };
}

const cases: Array<[string, (credentials: Credential[]) => Promise<void>]> = [
  [
    'the claim records the claimer’s username',
    async ([a]) => {
      const code = await startPairing();
      const claimed = await a!.call('/terminal/claim', { code, name: 'Till by username' });
      expect(claimed.status).toBe(200);
      const events = await a!.call('/event/list', {
        filter: { subject: { eq: claimed.body.terminal_id } },
      });
      expect(events.body.events).toEqual([
        expect.objectContaining({
          data: expect.objectContaining({ claimed_by: a!.username }),
        }),
      ]);
    },
  ],
  [
    'a burst of claims tries no more codes than the credential’s limit',
    async ([a, b]) => {
      expect(await guess(a!, 100)).toEqual({
        tried: PER_CREDENTIAL,
        refused: 100 - PER_CREDENTIAL,
      });
      // Another credential of the account has its own count.
      expect(await guess(b!, PER_CREDENTIAL)).toEqual({ tried: PER_CREDENTIAL, refused: 0 });
    },
  ],
  [
    'the account’s credentials together try no more than the account’s limit',
    async ([a, b, c]) => {
      await guess(a!, PER_CREDENTIAL);
      await guess(b!, PER_CREDENTIAL);
      expect(PER_CREDENTIAL * 2).toBe(PER_ACCOUNT);
      // The third credential has tried nothing, but the account has used its count.
      expect(await guess(c!, 5)).toEqual({ tried: 0, refused: 5 });
      // A right code is refused too, before it is looked at.
      const refused = await c!.call('/terminal/claim', { code: await startPairing() });
      expect(refused.status).toBe(429);
    },
  ],
  [
    'a credential cannot revoke itself; another of the account can revoke it',
    async ([a, b]) => {
      const self = await a!.call('/credential/revoke', { username: a!.username });
      expect(self.status).toBe(400);
      expect(self.body.error.description).toMatch(/cannot revoke itself/);
      expect((await a!.call('/terminal/list', {})).status).toBe(200);
      const other = await b!.call('/credential/revoke', { username: a!.username });
      expect(other.status).toBe(200);
    },
  ],
];

describe.each([
  ['HTTP Basic', byBasic],
  ['a console session', byConsole],
] as const)('claims through %s', (_way, signIn) => {
  it.each(cases)('%s', async (_name, run) => {
    await run(await freshAccount(signIn));
  });
});
