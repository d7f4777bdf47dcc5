/**
 * The relay-wide layer of configuration and which settings merchants may set (docs/fleet.md),
 * through the API, on SQLite and, with DATABASE_URL, on PostgreSQL: the operator's layer
 * lies under every account's and reaches every terminal; only the operator reads or sets
 * it and the list; a merchant may not change a setting it may not set, and what it set of
 * one before stops counting (the relay's value holds) until the operator lets it again;
 * what the operator sets for an account counts all the same. Simulated terminals (agents
 * with emulated readers on the embedded broker) apply each change and report it.
 */
import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FLEET_SETTING_NAMES, type TerminalConfigView } from '../protocol/index.js';
import { eventually } from './support/e2e-parts.js';
import { newMerchant, post, type TestRelay } from './support/relay.js';
import { relayOnEachStore } from './support/scratch-database.js';

type Credential = { username: string; password: string };

/** Simulated terminals as agents with emulated readers, on the embedded broker (aedes). */
const RELAY_SETTINGS = { simulatorMode: 'agent' } as const;

const STORES = relayOnEachStore(RELAY_SETTINGS, 'tps_relay_config');

describe.each(STORES)('the relay-wide layer and merchant settings on $name', ({ start }) => {
  let relay: TestRelay;
  let stop: () => Promise<void>;
  const call = (operation: string, body: unknown, credential: Credential) =>
    post(relay.baseUrl, 'v1', operation, body, credential);
  /** A merchant account made by the operator, with one simulated terminal. */
  const merchant = (name: string) => newMerchant(relay, name);
  type Merchant = Awaited<ReturnType<typeof merchant>>;
  /** The terminal's view as its merchant reads it. */
  const viewOf = async (m: Merchant): Promise<TerminalConfigView> => {
    const got = await call(
      '/fleet/config/get',
      { scope: { terminal_id: m.terminal.terminal_id } },
      m.credential,
    );
    expect(got.status, JSON.stringify(got.body)).toBe(200);
    return got.body.terminals[0];
  };
  /** Its agent applied and reported the desired configuration, and it is `config`. */
  const applied = (m: Merchant, config: object) =>
    eventually(
      () => viewOf(m),
      (view) => view.in_sync && isDeepStrictEqual(view.desired.config, config),
      { ms: 15_000, what: `${m.terminal.terminal_id} to apply ${JSON.stringify(config)}` },
    );
  const setRelay = async (config: object) => {
    const set = await call('/fleet/config/set', { scope: { relay: true }, config }, relay.operator);
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    return set.body;
  };
  const allowMerchants = async (settings: string[]) => {
    const set = await call('/fleet/config/merchant-settings/set', { settings }, relay.operator);
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    return set.body;
  };
  let a: Merchant;
  let b: Merchant;

  beforeAll(async () => {
    ({ relay, stop } = await start());
    a = await merchant('alpha');
    b = await merchant('beta');
  }, 30_000);
  afterAll(async () => {
    await stop?.();
  });

  it("lies under every account's layers, reaches every terminal, and a merchant's layer overrides it", async () => {
    const set = await setRelay({ log_level: 'warn', idle_screen_text: 'Relay wide' });
    expect(set.layer).toEqual({ log_level: 'warn', idle_screen_text: 'Relay wide' });
    const reached = set.terminals.map((t: TerminalConfigView) => t.terminal_id);
    expect(reached).toEqual(
      expect.arrayContaining([a.terminal.terminal_id, b.terminal.terminal_id]),
    );

    const own = await call(
      '/fleet/config/set',
      { scope: { account: true }, config: { idle_screen_text: 'Alpha' } },
      a.credential,
    );
    expect(own.status, JSON.stringify(own.body)).toBe(200);
    // Each agent gets the new effective configuration, applies and reports it.
    await applied(a, { log_level: 'warn', idle_screen_text: 'Alpha' });
    await applied(b, { log_level: 'warn', idle_screen_text: 'Relay wide' });

    const got = await call('/fleet/config/get', { scope: { relay: true } }, relay.operator);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({
      layer: { log_level: 'warn', idle_screen_text: 'Relay wide' },
      changed_at: set.changed_at,
    });
    // The account's own layer is its own: the relay's is not in it.
    const accountLayer = await call(
      '/fleet/config/get',
      { scope: { account: true } },
      b.credential,
    );
    expect(accountLayer.body.layer).toEqual({});
  }, 40_000);

  it("is the operator's alone: merchants and terminals are refused 403, an account_id 400", async () => {
    for (const operation of ['/fleet/config/get', '/fleet/config/set']) {
      const body = { scope: { relay: true }, config: { heartbeat_s: 5 } };
      const sent = operation.endsWith('get') ? { scope: body.scope } : body;
      for (const credential of [a.credential, a.terminal]) {
        const refused = await call(operation, sent, credential);
        expect([refused.status, refused.body.error?.code], operation).toEqual([403, 'FORBIDDEN']);
      }
      const named = await call(
        operation,
        { ...sent, account_id: a.account.account_id },
        relay.operator,
      );
      expect([named.status, named.body.error?.code], operation).toEqual([400, 'INVALID_REQUEST']);
      expect(named.body.error.description).toMatch(/account_id/);
    }
    for (const [operation, body] of [
      ['/fleet/config/merchant-settings/get', {}],
      ['/fleet/config/merchant-settings/set', { settings: [] }],
    ] as const) {
      for (const credential of [a.credential, a.terminal]) {
        const refused = await call(operation, body, credential);
        expect([refused.status, refused.body.error?.code], operation).toEqual([403, 'FORBIDDEN']);
      }
    }
    // Nothing changed by the refused writes.
    const got = await call('/fleet/config/get', { scope: { relay: true } }, relay.operator);
    expect(got.body.layer).not.toHaveProperty('heartbeat_s');
    const list = await call('/fleet/config/merchant-settings/get', {}, relay.operator);
    expect(list.body).toEqual({
      settings: [...FLEET_SETTING_NAMES],
      changed_at: null,
    });
  });

  it('narrowed, a merchant may not set what it may not, and what it set stops counting until widened', async () => {
    await setRelay({ log_level: 'warn', heartbeat_s: 30 });
    const before = await call(
      '/fleet/config/set',
      { scope: { account: true }, config: { log_level: 'debug', idle_screen_text: 'Alpha' } },
      a.credential,
    );
    expect(before.status).toBe(200);
    await applied(a, { log_level: 'debug', heartbeat_s: 30, idle_screen_text: 'Alpha' });

    const narrowed = await allowMerchants(['idle_screen_text', 'heartbeat_s']);
    expect(narrowed).toEqual({
      settings: ['heartbeat_s', 'idle_screen_text'],
      changed_at: expect.any(String),
    });
    // What it set of log_level stays stored but no longer counts: the relay's value holds,
    // and its agent gets the new effective configuration.
    await applied(a, { log_level: 'warn', heartbeat_s: 30, idle_screen_text: 'Alpha' });

    const refused = await call(
      '/fleet/config/set',
      {
        scope: { terminal_id: a.terminal.terminal_id },
        config: { log_level: 'trace', reader: { baud_rate: 9600 }, heartbeat_s: 10 },
      },
      a.credential,
    );
    expect([refused.status, refused.body.error?.code]).toEqual([403, 'FORBIDDEN']);
    expect(refused.body.error.description).toMatch(/log_level, reader/);
    const terminalLayer = await call(
      '/fleet/config/get',
      { scope: { terminal_id: a.terminal.terminal_id } },
      a.credential,
    );
    expect(terminalLayer.body.layer).toEqual({});
    // Removing the stored value is a change of it too; sending it back as stored is none.
    const removed = await call(
      '/fleet/config/set',
      { scope: { account: true }, config: { idle_screen_text: 'Alpha' } },
      a.credential,
    );
    expect(removed.status).toBe(403);
    const kept = await call(
      '/fleet/config/set',
      { scope: { account: true }, config: { log_level: 'debug', idle_screen_text: 'Alpha 2' } },
      a.credential,
    );
    expect(kept.status, JSON.stringify(kept.body)).toBe(200);
    await applied(a, { log_level: 'warn', heartbeat_s: 30, idle_screen_text: 'Alpha 2' });

    // The operator, acting for the account, sets what merchants may not: it counts.
    const byOperator = await call(
      '/fleet/config/set',
      {
        account_id: b.account.account_id,
        scope: { terminal_id: b.terminal.terminal_id },
        config: { log_level: 'error' },
      },
      relay.operator,
    );
    expect(byOperator.status, JSON.stringify(byOperator.body)).toBe(200);
    await applied(b, { log_level: 'error', heartbeat_s: 30 });
    // ... and the merchant may keep it in its layer, not change it.
    const merchantKeeps = await call(
      '/fleet/config/set',
      {
        scope: { terminal_id: b.terminal.terminal_id },
        config: { log_level: 'error', heartbeat_s: 15 },
      },
      b.credential,
    );
    expect(merchantKeeps.status, JSON.stringify(merchantKeeps.body)).toBe(200);
    await applied(b, { log_level: 'error', heartbeat_s: 15 });

    // Widened again, what the merchant set counts again.
    const widened = await allowMerchants(['log_level', 'idle_screen_text', 'heartbeat_s']);
    expect(widened.settings).toEqual(['heartbeat_s', 'log_level', 'idle_screen_text']);
    await applied(a, { log_level: 'debug', heartbeat_s: 30, idle_screen_text: 'Alpha 2' });
    const allowed = await call(
      '/fleet/config/set',
      { scope: { terminal_id: a.terminal.terminal_id }, config: { log_level: 'info' } },
      a.credential,
    );
    expect(allowed.status, JSON.stringify(allowed.body)).toBe(200);
    await allowMerchants([...FLEET_SETTING_NAMES]);
  }, 60_000);

  it('refuses a list that is not one: an unknown setting, one named twice', async () => {
    for (const settings of [['volume'], ['log_level', 'log_level'], 'log_level']) {
      const refused = await call(
        '/fleet/config/merchant-settings/set',
        { settings },
        relay.operator,
      );
      expect([refused.status, refused.body.error?.code]).toEqual([400, 'INVALID_REQUEST']);
    }
  });
});
