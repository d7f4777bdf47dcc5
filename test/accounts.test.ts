/**
 * Many merchants on one relay (docs/tenants.md): the operator creates merchant accounts,
 * each pays with its own simulated terminal and sees nothing of the other's; the operator
 * sees no payment; a disabled account's credentials are refused everywhere, its data kept.
 * Every case on SQLite and, with DATABASE_URL, on PostgreSQL; an account disabled on one
 * relay is refused by another at once (by the change bus, not when its cache ages).
 */
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountCreateResponse, AccountListResponse } from '../protocol/index.js';
import { eventually } from './support/e2e-parts.js';
import { until } from './support/link-switch.js';
import { hashSecret } from '../cloud/accounts/secrets.js';
import { sqliteFileAtVersion } from '../cloud/store/sqlite-migrations.js';
import {
  TEST_ACCOUNT,
  newMerchant,
  post,
  startTestRelay,
  tempDataDir,
  type TestRelay,
} from './support/relay.js';
import { twoRelaysOnOneDatabase, relayOnEachStore } from './support/scratch-database.js';

type Credential = { username: string; password: string };

const DATABASE_URL = process.env.DATABASE_URL;
/** In-process simulators; webhook receivers on loopback, as the tests' receiver is. */
const RELAY_SETTINGS = {
  simulatorMode: 'in-process',
  webhookAllowHttp: true,
  webhookAllowNetworks: '127.0.0.1/32',
} as const;

/** A webhook receiver on loopback: `external_id state` of each transaction event, in order. */
async function startReceiver() {
  const states: string[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      // Transaction events only (a terminal's status events carry no state).
      const { data } = JSON.parse(body) as { data: { external_id?: string; state?: string } };
      if (data.state) states.push(`${data.external_id} ${data.state}`);
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    states,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

const STORES = relayOnEachStore(RELAY_SETTINGS, 'tps_accounts');

describe.each(STORES)('accounts on $name', ({ start }) => {
  let relay: TestRelay;
  let stop: () => Promise<void>;
  const call = (operation: string, body: unknown, credential: Credential) =>
    post(relay.baseUrl, 'v1', operation, body, credential);
  /** A merchant account made by the operator, with a simulated terminal that has paid once. */
  const merchant = async (name: string) => {
    const { account, credential, terminal } = await newMerchant(relay, name);
    const paid = await call(
      '/transaction/purchase',
      {
        terminal_id: terminal.terminal_id,
        external_id: `${name}-1`,
        requested_amount: 1000,
        currency: 'EUR',
        wait_seconds: 10,
      },
      terminal,
    );
    expect(paid.body.transaction?.state).toBe('AWAITING_CONFIRM');
    return { account, credential, terminal };
  };

  beforeAll(async () => {
    ({ relay, stop } = await start());
  });
  afterAll(async () => {
    await stop?.();
  });

  it('two merchants, each paying with its own terminal, see nothing of each other', async () => {
    const a = await merchant('alpha');
    const b = await merchant('beta');
    expect(a.account).toMatchObject({ kind: 'merchant', name: 'alpha' });
    // B's credentials reach nothing of A's: terminal, transaction, events.
    const get = { terminal_id: a.terminal.terminal_id, external_id: 'alpha-1' };
    expect((await call('/transaction/get', get, b.credential)).status).toBe(404);
    expect((await call('/transaction/get', get, b.terminal)).status).toBe(404);
    expect((await call('/transaction/get', get, a.credential)).status).toBe(200);
    const listed = await call('/terminal/list', {}, b.credential);
    expect(listed.body.terminals.map((t: { terminal_id: string }) => t.terminal_id)).toEqual([
      b.terminal.terminal_id,
    ]);
    const events = await call('/event/list', { limit: 1000 }, b.credential);
    expect(JSON.stringify(events.body)).not.toContain(a.terminal.terminal_id);
    const searched = await call('/transaction/search', {}, b.credential);
    expect(searched.body.transactions.map((t: { external_id: string }) => t.external_id)).toEqual([
      'beta-1',
    ]);
    // The operator lists both, and itself.
    const accounts = AccountListResponse.parse(
      (await call('/account/list', {}, relay.operator)).body,
    ).accounts;
    expect(accounts.map((x) => x.account_id)).toEqual(
      expect.arrayContaining([a.account.account_id, b.account.account_id]),
    );
    expect(accounts.filter((x) => x.kind === 'operator')).toHaveLength(1);
  });

  it("the operator sees and configures the fleet of the account it names, and no other's", async () => {
    const a = await merchant('theta');
    const b = await merchant('iota');
    const facts = await call('/fleet/facts', { account_id: a.account.account_id }, relay.operator);
    expect(facts.status).toBe(200);
    expect(facts.body.terminals.map((t: { terminal_id: string }) => t.terminal_id)).toEqual([
      a.terminal.terminal_id,
    ]);
    const named = await call(
      '/fleet/config/set',
      { account_id: a.account.account_id, scope: { account: true }, config: { heartbeat_s: 45 } },
      relay.operator,
    );
    expect(named.status).toBe(200);
    const layer = async (credential: Credential) =>
      (await call('/fleet/config/get', { scope: { account: true } }, credential)).body.layer;
    expect(await layer(a.credential)).toEqual({ heartbeat_s: 45 });
    expect(await layer(b.credential)).toEqual({});
    // The operator names the account; a merchant naming another's finds nothing.
    const unnamed = await call('/fleet/facts', {}, relay.operator);
    expect([unnamed.status, unnamed.body.error?.code]).toEqual([400, 'INVALID_REQUEST']);
    const unknown = await call('/fleet/facts', { account_id: 'acct-nobody' }, relay.operator);
    expect([unknown.status, unknown.body.error?.code]).toEqual([404, 'NOT_FOUND']);
    const crossed = await call('/fleet/facts', { account_id: a.account.account_id }, b.credential);
    expect([crossed.status, crossed.body.error?.code]).toEqual([404, 'NOT_FOUND']);
    const own = await call('/fleet/facts', { account_id: b.account.account_id }, b.credential);
    expect(own.status).toBe(200);
  });

  it('refuses each role what is not its own (403), with the error object', async () => {
    const a = await merchant('gamma');
    const forbidden = async (operation: string, body: unknown, credential: Credential) => {
      const answer = await call(operation, body, credential);
      expect([operation, answer.status, answer.body.error?.code]).toEqual([
        operation,
        403,
        'FORBIDDEN',
      ]);
    };
    // The operator sees no payment, event or webhook of a merchant.
    const pair = { terminal_id: a.terminal.terminal_id, external_id: 'gamma-1' };
    await forbidden('/transaction/get', pair, relay.operator);
    await forbidden(
      '/transaction/purchase',
      { ...pair, external_id: 'op-1', requested_amount: 1, currency: 'EUR' },
      relay.operator,
    );
    await forbidden('/transaction/search', {}, relay.operator);
    await forbidden('/event/list', {}, relay.operator);
    await forbidden('/webhook/list', {}, relay.operator);
    await forbidden('/simulator/create', {}, relay.operator);
    // Accounts are the operator's alone.
    for (const credential of [a.credential, a.terminal, relay.account]) {
      await forbidden('/account/create', { name: 'x' }, credential);
      await forbidden('/account/list', {}, credential);
      await forbidden('/account/disable', { account_id: a.account.account_id }, credential);
    }
  });

  it("adds, rotates and revokes credentials: the operator for the account it names, a merchant its own, no one another's", async () => {
    const a = await merchant('kappa');
    const b = await merchant('lambda');
    const account_id = a.account.account_id;
    const terminalsSeen = async (credential: Credential) => {
      const listed = await call('/terminal/list', {}, credential);
      return listed.status === 200
        ? listed.body.terminals.map((t: { terminal_id: string }) => t.terminal_id)
        : listed.status;
    };
    const added = await call('/account/credential/add', { account_id }, relay.operator);
    expect(added.status).toBe(200);
    expect(added.body.credential).toMatchObject({ account_id });
    const byOperator: Credential = added.body.credential;
    expect(await terminalsSeen(byOperator)).toEqual([a.terminal.terminal_id]);
    const own = await call('/account/credential/add', {}, a.credential);
    expect(await terminalsSeen(own.body.credential)).toEqual([a.terminal.terminal_id]);

    // No one reaches another's: a merchant naming another account, or its credentials.
    const crossed = await call('/account/credential/add', { account_id }, b.credential);
    expect([crossed.status, crossed.body.error?.code]).toEqual([404, 'NOT_FOUND']);
    const stolen = await call(
      '/credential/rotate',
      { username: a.credential.username },
      b.credential,
    );
    expect([stolen.status, stolen.body.error?.code]).toEqual([404, 'CREDENTIAL_NOT_FOUND']);
    const byTerminal = await call('/account/credential/add', {}, a.terminal);
    expect([byTerminal.status, byTerminal.body.error?.code]).toEqual([403, 'FORBIDDEN']);
    const unnamed = await call('/account/credential/add', {}, relay.operator);
    expect([unnamed.status, unnamed.body.error?.code]).toEqual([400, 'INVALID_REQUEST']);

    // The operator rotates the merchant's first credential: the old secret stops at once.
    const rotated = await call(
      '/credential/rotate',
      { account_id, username: a.credential.username },
      relay.operator,
    );
    expect(rotated.status).toBe(200);
    expect(await terminalsSeen(a.credential)).toBe(401);
    const renewed = { username: a.credential.username, password: rotated.body.credential.password };
    expect(await terminalsSeen(renewed)).toEqual([a.terminal.terminal_id]);
    // The merchant revokes the one the operator added; the operator a terminal's of it.
    const revoked = await call('/credential/revoke', { username: byOperator.username }, renewed);
    expect(revoked.status).toBe(200);
    expect(await terminalsSeen(byOperator)).toBe(401);
    const terminalRevoked = await call(
      '/credential/revoke',
      { account_id, username: a.terminal.username },
      relay.operator,
    );
    expect(terminalRevoked.status).toBe(200);
    const paid = await call(
      '/transaction/get',
      { terminal_id: a.terminal.terminal_id, external_id: 'kappa-1' },
      a.terminal,
    );
    expect(paid.status).toBe(401);
    // The operator registers a terminal into the account it names.
    const created = await call('/terminal/create', { account_id }, relay.operator);
    expect(created.status).toBe(200);
    expect(await terminalsSeen(renewed)).toEqual(
      expect.arrayContaining([a.terminal.terminal_id, created.body.terminal_id]),
    );
    expect(await terminalsSeen(b.credential)).toEqual([b.terminal.terminal_id]);

    // A credential set in the relay's environment is changed there, not here.
    const configured = await call(
      '/credential/rotate',
      { username: relay.account.username },
      relay.account,
    );
    expect([configured.status, configured.body.error?.code]).toEqual([400, 'INVALID_REQUEST']);
    const another = await call('/account/credential/add', {}, relay.account);
    expect([another.status, another.body.error?.code]).toEqual([400, 'INVALID_REQUEST']);
  });

  it("stops a disabled account's webhooks; enabled, they get what waited, from where they stopped", async () => {
    const a = await merchant('eta');
    const receiver = await startReceiver();
    try {
      const hook = await call(
        '/webhook/create',
        { url: receiver.url, filter: { subject: { eq: a.terminal.terminal_id } } },
        a.credential,
      );
      expect(hook.status, JSON.stringify(hook.body)).toBe(200);
      const pay = (externalId: string, amount: number) =>
        call(
          '/transaction/purchase',
          {
            terminal_id: a.terminal.terminal_id,
            external_id: externalId,
            requested_amount: amount,
            currency: 'EUR',
            wait_seconds: 0,
          },
          a.terminal,
        );
      await pay('eta-2', 1000);
      await until('delivered', () => receiver.states.includes('eta-2 AWAITING_CONFIRM'));
      // A payment in flight when the account is disabled: the terminal finishes it (100001:
      // success after 2 s), its events are kept, but not sent while disabled.
      expect((await pay('eta-3', 100001)).body.transaction.state).toBe('PROCESSING');
      await call('/account/disable', { account_id: a.account.account_id }, relay.operator);
      await until(
        'the payment finished',
        async () =>
          (await relay.store.getTransaction(a.terminal.terminal_id, 'eta-3'))?.txn.state ===
          'AWAITING_CONFIRM',
      );
      // The receiver would have had it by now (it had the first within moments).
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(receiver.states).not.toContain('eta-3 AWAITING_CONFIRM');
      await call('/account/enable', { account_id: a.account.account_id }, relay.operator);
      await until('sent once enabled', () => receiver.states.includes('eta-3 AWAITING_CONFIRM'));
      expect(receiver.states.filter((x) => x === 'eta-3 AWAITING_CONFIRM')).toHaveLength(1);
    } finally {
      await receiver.close();
    }
  });

  it('disables an account: its credentials refused, its data kept; enabled, it works as before', async () => {
    const a = await merchant('delta');
    const b = await merchant('epsilon');
    const disabled = await call(
      '/account/disable',
      { account_id: a.account.account_id },
      relay.operator,
    );
    expect(disabled.body.account.disabled_at).toEqual(expect.any(String));
    const pair = { terminal_id: a.terminal.terminal_id, external_id: 'delta-1' };
    for (const credential of [a.credential, a.terminal]) {
      const refused = await call('/transaction/get', pair, credential);
      expect([refused.status, refused.body.error?.description]).toEqual([
        401,
        'this account is disabled',
      ]);
    }
    // The other merchant is untouched.
    const other = { terminal_id: b.terminal.terminal_id, external_id: 'epsilon-1' };
    expect((await call('/transaction/get', other, b.terminal)).status).toBe(200);
    const enabled = await call(
      '/account/enable',
      { account_id: a.account.account_id },
      relay.operator,
    );
    expect(enabled.body.account).not.toHaveProperty('disabled_at');
    const back = await call('/transaction/get', pair, a.terminal);
    expect([back.status, back.body.transaction?.state]).toEqual([200, 'AWAITING_CONFIRM']);
    // The operator's own account is not disabled; an unknown one is not found.
    const operatorAccount = AccountListResponse.parse(
      (await call('/account/list', {}, relay.operator)).body,
    ).accounts.find((x) => x.kind === 'operator')!;
    const own = await call(
      '/account/disable',
      { account_id: operatorAccount.account_id },
      relay.operator,
    );
    expect([own.status, own.body.error?.code]).toEqual([400, 'INVALID_REQUEST']);
    const unknown = await call('/account/get', { account_id: 'acct-nobody' }, relay.operator);
    expect([unknown.status, unknown.body.error?.code]).toEqual([404, 'NOT_FOUND']);
  });
});

describe("a store of today's one account", () => {
  it('starts with that account as a merchant, an operator made and shown once, who has its releases', async () => {
    // The file as the release before accounts had kinds left it: schema 12, one account
    // with its credential, named by the default-account setting.
    const dataDir = tempDataDir();
    const old = sqliteFileAtVersion(path.join(dataDir, 'relay.sqlite'), 12);
    old.prepare("INSERT INTO accounts VALUES ('acct-old', 'then')").run();
    old
      .prepare("INSERT INTO credentials VALUES (?, ?, 'acct-old', NULL, 'then')")
      .run(TEST_ACCOUNT.username, await hashSecret(TEST_ACCOUNT.password));
    old.prepare("INSERT INTO settings VALUES ('default_account_id', 'acct-old')").run();
    old
      .prepare(
        "INSERT INTO releases VALUES ('acct-old', '1.0.0', 'linux-x64', '{}', 'c2ln', ?, 1, 'r.tar.gz', 'then')",
      )
      .run('a'.repeat(64));
    old.close();

    const unset = { operatorUsername: undefined, operatorPassword: undefined };
    const first = await startTestRelay(unset, dataDir);
    const operator = first.bootstrap.operatorCredential!;
    expect(operator).toBeDefined();
    expect(first.bootstrap.accountId).toBe('acct-old');
    const listed = AccountListResponse.parse(
      (await post(first.baseUrl, 'v1', '/account/list', {}, operator)).body,
    ).accounts;
    expect(listed).toContainEqual(
      expect.objectContaining({ account_id: 'acct-old', kind: 'merchant' }),
    );
    // The account's release is the operator's now.
    expect(
      await first.store.findRelease(first.bootstrap.operatorAccountId, '1.0.0', 'linux-x64'),
    ).toMatchObject({ archiveSha256: 'a'.repeat(64) });
    // The merchant's credential works as before.
    expect((await post(first.baseUrl, 'v1', '/terminal/list', {}, TEST_ACCOUNT)).status).toBe(200);
    await first.close();
    // Shown once: the next start has it already.
    const second = await startTestRelay(unset, dataDir);
    expect(second.bootstrap.operatorCredential).toBeUndefined();
    expect((await post(second.baseUrl, 'v1', '/account/list', {}, operator)).status).toBe(200);
    await second.close();
  });
});

describe.skipIf(!DATABASE_URL)('two relays on one PostgreSQL (DATABASE_URL)', () => {
  const relays = twoRelaysOnOneDatabase(DATABASE_URL!, 'tps_accounts_two', {
    simulatorMode: 'in-process',
    // A confirmed payment's grace period ends while its account is disabled.
    gracePeriodS: 1,
  });

  it('an account disabled on one relay is refused by the other at once, not when its cache ages; its payments in flight end as the state machine says', async () => {
    const { a, b } = relays;
    const created = AccountCreateResponse.parse(
      (await post(a.baseUrl, 'v1', '/account/create', { name: 'zeta' }, a.operator)).body,
    );
    // Relay B has read (and kept) the account as enabled.
    expect((await post(b.baseUrl, 'v1', '/terminal/list', {}, created.credential)).status).toBe(
      200,
    );
    // Payments in flight: one confirmed (its grace period running), one awaiting its confirm.
    const terminal = (await post(a.baseUrl, 'v1', '/simulator/create', {}, created.credential))
      .body as { terminal_id: string; username: string; password: string };
    const pay = async (externalId: string) => {
      const paid = await post(
        a.baseUrl,
        'v1',
        '/transaction/purchase',
        {
          terminal_id: terminal.terminal_id,
          external_id: externalId,
          requested_amount: 1000,
          currency: 'EUR',
          wait_seconds: 10,
        },
        terminal,
      );
      expect(paid.body.transaction?.state).toBe('AWAITING_CONFIRM');
    };
    await pay('zeta-1');
    await pay('zeta-2');
    const confirm = (externalId: string) =>
      post(
        a.baseUrl,
        'v1',
        '/transaction/confirm',
        { terminal_id: terminal.terminal_id, external_id: externalId, result_code: 'SUCCESS' },
        terminal,
      );
    expect((await confirm('zeta-1')).body.transaction?.state).toBe('CONFIRMED');
    await post(
      a.baseUrl,
      'v1',
      '/account/disable',
      { account_id: created.account.account_id },
      a.operator,
    );
    // The notice travels through PostgreSQL: B refuses within moments, far inside the 10 s
    // it otherwise keeps what it read of an account.
    await eventually(
      () => post(b.baseUrl, 'v1', '/terminal/list', {}, created.credential).then((r) => r.status),
      (code) => code === 401,
      { ms: 3_000, every: 20, what: 'relay B refusing the disabled account' },
    );
    // They end as the state machine says: the confirmed one commits when its grace period
    // ends; the other waits for its confirm, which the POS sends once the account is back.
    const stateOf = async (externalId: string) =>
      (await a.store.getTransaction(terminal.terminal_id, externalId))?.txn.state;
    await eventually(
      () => stateOf('zeta-1'),
      (state) => state === 'COMMITTED',
      { ms: 10_000, what: 'the confirmed payment committed at the end of its grace period' },
    );
    expect(await stateOf('zeta-2')).toBe('AWAITING_CONFIRM');
    expect((await confirm('zeta-2')).status).toBe(401);
    await post(
      b.baseUrl,
      'v1',
      '/account/enable',
      { account_id: created.account.account_id },
      b.operator,
    );
    await eventually(
      () => confirm('zeta-2').then((r) => r.body.transaction?.state),
      (state) => state === 'CONFIRMED',
      { ms: 3_000, every: 50, what: 'the confirm taken once the account is enabled' },
    );
  });
});

if (!DATABASE_URL) {
  describe('accounts on PostgreSQL', () => {
    it.skip('SKIPPED, DATABASE_URL is not set (e.g. postgres://postgres@127.0.0.1:5432/test): the same cases on PostgreSQL, and a disable seen by a second relay within a second', () => {});
  });
}
