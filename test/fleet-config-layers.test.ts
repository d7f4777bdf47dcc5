/**
 * The layers of desired configuration through the API: a terminal's effective
 * configuration is the account's, overlaid by its cohort's (the one chosen at its claim),
 * overlaid by its own; each level reaches exactly its terminals; the version follows the
 * effective configuration, not the writes; another account's terminals stay out of reach.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashGeneratedSecret } from '../cloud/accounts/secrets.js';
import { post, startTestRelay, type TestRelay } from './support/relay.js';

let relay: TestRelay;
beforeAll(async () => {
  relay = await startTestRelay();
});
afterAll(async () => {
  await relay.close();
});

const account = (op: string, body: object) => post(relay.baseUrl, 'v1', op, body, relay.account);

/** A terminal paired into `cohort`, as `tps agent pair` and `tps terminal claim` make one. */
async function paired(cohort?: string): Promise<string> {
  const secret = randomBytes(32).toString('base64url');
  const started = await fetch(`${relay.baseUrl}/v1/pairing/start`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ secret_sha256: createHash('sha256').update(secret).digest('hex') }),
  });
  const { code } = (await started.json()) as { code: string };
  const claimed = await account('/terminal/claim', { code, ...(cohort ? { cohort } : {}) });
  expect(claimed.status, JSON.stringify(claimed.body)).toBe(200);
  return claimed.body.terminal_id;
}

const desiredOf = async (terminalId: string) =>
  (await account('/fleet/config/get', { scope: { terminal_id: terminalId } })).body.terminals[0]
    .desired;

describe('layers of desired configuration', () => {
  it('overlays account ← cohort ← terminal, setting by setting', async () => {
    const north1 = await paired('cohort-north');
    const north2 = await paired('cohort-north');
    const south = await paired('cohort-south');
    const none = await paired();
    const empty = await desiredOf(north1);
    expect(empty.config).toEqual({});

    await account('/fleet/config/set', {
      scope: { account: true },
      config: { log_level: 'info', heartbeat_s: 60, reader: { baud_rate: 9600 } },
    });
    const cohort = await account('/fleet/config/set', {
      scope: { cohort: 'cohort-north' },
      config: { heartbeat_s: 20, reader: { profile: 'ccv' } },
    });
    expect(cohort.body.terminals.map((t: { terminal_id: string }) => t.terminal_id)).toEqual(
      [north1, north2].sort(),
    );
    await account('/fleet/config/set', {
      scope: { terminal_id: north1 },
      config: { heartbeat_s: 5 },
    });

    expect((await desiredOf(north1)).config).toEqual({
      log_level: 'info',
      heartbeat_s: 5,
      reader: { baud_rate: 9600, profile: 'ccv' },
    });
    expect((await desiredOf(north2)).config).toEqual({
      log_level: 'info',
      heartbeat_s: 20,
      reader: { baud_rate: 9600, profile: 'ccv' },
    });
    for (const id of [south, none]) {
      expect((await desiredOf(id)).config).toEqual({
        log_level: 'info',
        heartbeat_s: 60,
        reader: { baud_rate: 9600 },
      });
    }
    const accountLevel = await account('/fleet/config/get', { scope: { account: true } });
    expect(accountLevel.body.layer).toEqual({
      log_level: 'info',
      heartbeat_s: 60,
      reader: { baud_rate: 9600 },
    });
    expect(accountLevel.body.terminals.length).toBeGreaterThanOrEqual(4);
  });

  it('changes the version when the effective configuration changes, and only then', async () => {
    const id = await paired('cohort-versions');
    const set = (config: object) =>
      account('/fleet/config/set', { scope: { terminal_id: id }, config });
    const first = (await set({ idle_screen_text: 'A' })).body.terminals[0].desired.version;
    expect((await set({ idle_screen_text: 'A' })).body.terminals[0].desired.version).toBe(first);
    const second = (await set({ idle_screen_text: 'B' })).body.terminals[0].desired.version;
    expect(second).not.toBe(first);
    // The same effective configuration reached through another level: the same version.
    await set({});
    await account('/fleet/config/set', {
      scope: { cohort: 'cohort-versions' },
      config: { idle_screen_text: 'B' },
    });
    expect((await desiredOf(id)).version).toBe(second);
  });

  it("keeps another account's terminals out of reach", async () => {
    const other = { username: 'fleet-other-account', password: 'fleet-other-password' };
    const now = new Date().toISOString();
    await relay.store.createAccount({ id: 'acct-fleet-other', kind: 'merchant', createdAt: now });
    await relay.store.putCredential({
      username: other.username,
      secretHash: hashGeneratedSecret(other.password),
      accountId: 'acct-fleet-other',
      createdAt: now,
    });
    const id = await paired();
    const res = await post(
      relay.baseUrl,
      'v1',
      '/fleet/config/get',
      { scope: { terminal_id: id } },
      other,
    );
    expect(res.body.error?.code).toBe('TERMINAL_NOT_FOUND');
    const set = await post(
      relay.baseUrl,
      'v1',
      '/fleet/config/set',
      { scope: { account: true }, config: { log_level: 'trace' } },
      other,
    );
    expect(set.body.terminals).toEqual([]);
    expect((await desiredOf(id)).config.log_level).not.toBe('trace');
  });
});
