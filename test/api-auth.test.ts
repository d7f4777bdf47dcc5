/**
 * Authentication and isolation over real HTTP: HTTP Basic on every operation (401 with a
 * Basic challenge and the error object otherwise), a terminal credential reaches only its
 * own terminal (everything else answers as if it did not exist), the account credential
 * reaches all its terminals, and neither secrets nor card data reach the log.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCloudConfig } from '../cloud/config-settings.js';
import { loggerOptions } from '../cloud/logging.js';
import { startRelay } from '../cloud/relay.js';
import type { SimulatorCreateResponse } from '../protocol/index.js';
import {
  OPERATION_PATHS,
  REVISIONS,
  expectError,
  send,
  smallPngBase64,
  type Credential,
} from './support/api.js';
import {
  TEST_ACCOUNT,
  basicAuth,
  post,
  posFor,
  startTestRelay,
  tempDataDir,
  type TestRelay,
} from './support/relay.js';

const b64 = (text: string) => Buffer.from(text).toString('base64');

/** A body that would be valid for each operation, so that only authentication can fail. */
const validBody = (terminalId: string): Record<string, Record<string, unknown>> => ({
  '/transaction/purchase': {
    terminal_id: terminalId,
    external_id: 'auth-1',
    requested_amount: 100002,
    currency: 'EUR',
  },
  '/transaction/refund': {
    terminal_id: terminalId,
    external_id: 'auth-2',
    requested_amount: 100002,
    currency: 'EUR',
  },
  '/transaction/confirm': {
    terminal_id: terminalId,
    external_id: 'auth-1',
    result_code: 'ABORTED',
  },
  '/transaction/get': { terminal_id: terminalId, external_id: 'auth-1' },
  '/transaction/continue': { terminal_id: terminalId, external_id: 'auth-1' },
  '/transaction/unconfirmed': { terminal_id: terminalId },
  '/terminal/status': { terminal_id: terminalId },
  '/terminal/print': { terminal_id: terminalId, contents: smallPngBase64(), format: 'PNG' },
  '/simulator/create': {},
  '/terminal/list': {},
  '/transaction/search': {},
  '/terminal/create': {},
  '/event/list': { filter: { subject: { eq: terminalId } } },
  '/webhook/create': { url: 'https://receiver.invalid/hooks' },
  '/webhook/list': {},
  '/webhook/delete': { id: `wh-${'0'.repeat(26)}` },
  '/webhook/enable': { id: `wh-${'0'.repeat(26)}` },
  '/webhook/disable': { id: `wh-${'0'.repeat(26)}` },
  '/credential/revoke': { username: 'no-such-user' },
  '/credential/rotate': { username: 'no-such-user' },
});

function expectChallenge(res: { headers: Headers }) {
  expect(res.headers.get('www-authenticate') ?? '').toMatch(/^Basic\b/);
}

describe('authentication', () => {
  let relay: TestRelay;
  let sim: SimulatorCreateResponse;
  beforeAll(async () => {
    relay = await startTestRelay();
    sim = await relay.newSimulator();
  });
  afterAll(async () => {
    await relay.close();
  });

  const AUTH_TABLE = REVISIONS.flatMap((revision) =>
    OPERATION_PATHS.map((operation) => ({ revision, operation })),
  );

  it.each(AUTH_TABLE)(
    '$revision $operation without Authorization answers 401 with a Basic challenge',
    async ({ revision, operation }) => {
      const res = await send(relay.baseUrl, revision, operation, {
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(validBody(sim.terminal_id)[operation]),
      });
      expectError(res, 401, 'UNAUTHORIZED');
      expectChallenge(res);
    },
  );

  describe.each(REVISIONS)('wrong or malformed credentials (%s)', (revision) => {
    const attempt = (authorization: string, body = '{}') =>
      send(relay.baseUrl, revision, '/terminal/status', {
        headers: { authorization, 'content-type': 'application/json' },
        body: body === '{}' ? JSON.stringify({ terminal_id: sim.terminal_id }) : body,
      });

    it('a wrong password answers 401', async () => {
      const res = await attempt(
        basicAuth({ username: sim.username, password: 'not-the-password' }),
      );
      expectError(res, 401, 'UNAUTHORIZED');
      expectChallenge(res);
    });

    it('the password of another credential answers 401', async () => {
      const res = await attempt(
        basicAuth({ username: sim.username, password: TEST_ACCOUNT.password }),
      );
      expectError(res, 401, 'UNAUTHORIZED');
    });

    it('an empty password answers 401', async () => {
      const res = await attempt(`Basic ${b64(`${sim.username}:`)}`);
      expectError(res, 401, 'UNAUTHORIZED');
    });

    it('an unknown user answers 401', async () => {
      const res = await attempt(basicAuth({ username: 'key-unknown', password: sim.password }));
      expectError(res, 401, 'UNAUTHORIZED');
      expectChallenge(res);
    });

    it.each([
      ['a Bearer token', 'Bearer abc.def.ghi'],
      ['the scheme alone', 'Basic'],
      ['bad base64', 'Basic !!!not-base64!!!'],
      ['base64 without a colon', `Basic ${b64('no-colon-here')}`],
      ['an empty username', `Basic ${b64(':some-password')}`],
      ['credentials without the scheme', b64('user:password')],
      ['two schemes', `Basic ${b64('a:b')}, Bearer x`],
    ])('%s answers 401 with the error object', async (_label, header) => {
      const res = await attempt(header);
      expectError(res, 401, 'UNAUTHORIZED');
      expectChallenge(res);
    });

    it('the scheme name is case-insensitive (RFC 9110)', async () => {
      const header = `basic ${b64(`${sim.username}:${sim.password}`)}`;
      const res = await attempt(header);
      expect(res.status, res.text).toBe(200);
    });

    it('credentials are checked before the body: a broken body without credentials is 401', async () => {
      const res = await send(relay.baseUrl, revision, '/transaction/purchase', {
        headers: { 'content-type': 'application/json' },
        body: '{"terminal_id":',
      });
      expectError(res, 401, 'UNAUTHORIZED');
    });

    it('the error never echoes the password', async () => {
      const res = await attempt(basicAuth({ username: sim.username, password: 'secret-xyz-123' }));
      expect(res.text).not.toContain('secret-xyz-123');
    });
  });
});

describe('isolation between credentials', () => {
  let relay: TestRelay;
  beforeAll(async () => {
    relay = await startTestRelay();
  });
  afterAll(async () => {
    await relay.close();
  });

  describe.each(REVISIONS)('%s', (revision) => {
    /** Two simulators of the account, and a finished purchase on the first one. */
    async function twoTerminals() {
      const first = posFor(relay, await relay.newSimulator(), revision);
      const second = posFor(relay, await relay.newSimulator(), revision);
      const created = await first.call('/transaction/purchase', {
        external_id: 'mine',
        requested_amount: 100002,
        currency: 'EUR',
      });
      expect(created.status).toBe(200);
      expect(created.body.transaction.state).toBe('AWAITING_CONFIRM');
      /** The second simulator's credential, aimed at the first simulator's terminal. */
      const intrude = (operation: string, body: Record<string, unknown>) =>
        post(
          relay.baseUrl,
          revision,
          operation,
          { terminal_id: first.terminalId, ...body },
          second.credential,
        );
      return { first, second, intrude };
    }

    it('create, status and print on another terminal answer 400 TERMINAL_NOT_FOUND', async () => {
      const { intrude, first } = await twoTerminals();
      const answers = {
        purchase: await intrude('/transaction/purchase', {
          external_id: 'theirs',
          requested_amount: 100,
          currency: 'EUR',
        }),
        refund: await intrude('/transaction/refund', {
          external_id: 'theirs-refund',
          requested_amount: 100,
          currency: 'EUR',
        }),
        status: await intrude('/terminal/status', {}),
        print: await intrude('/terminal/print', { contents: smallPngBase64(), format: 'PNG' }),
      };
      for (const res of Object.values(answers)) expectError(res, 400, 'TERMINAL_NOT_FOUND');

      // The same answer as for a terminal that does not exist at all.
      const missing = await post(
        relay.baseUrl,
        revision,
        '/terminal/status',
        { terminal_id: 't-1900000000' },
        first.credential,
      );
      expectError(missing, 400, 'TERMINAL_NOT_FOUND');
      expect(answers.status.body.error.description).toBe(
        missing.body.error.description.replace('t-1900000000', first.terminalId),
      );
    });

    it('get and unconfirmed on another terminal answer 404 NOT_FOUND', async () => {
      const { intrude } = await twoTerminals();
      expectError(await intrude('/transaction/get', { external_id: 'mine' }), 404, 'NOT_FOUND');
      expectError(await intrude('/transaction/unconfirmed', {}), 404, 'NOT_FOUND');
    });

    it("get of the other terminal's transaction answers 404 NOT_FOUND", async () => {
      const { first, second } = await twoTerminals();
      const throughOwnTerminal = await second.call('/transaction/get', { external_id: 'mine' });
      expectError(throughOwnTerminal, 404, 'NOT_FOUND');
      const direct = await post(
        relay.baseUrl,
        revision,
        '/transaction/get',
        { terminal_id: first.terminalId, external_id: 'mine' },
        second.credential,
      );
      expectError(direct, 404, 'NOT_FOUND');
    });

    it('confirm and continue on another terminal are refused and change nothing', async () => {
      const { first, intrude } = await twoTerminals();
      expectError(
        await intrude('/transaction/confirm', { external_id: 'mine', result_code: 'ABORTED' }),
        400,
        'TERMINAL_NOT_FOUND',
      );
      expectError(
        await intrude('/transaction/continue', { external_id: 'mine' }),
        400,
        'TERMINAL_NOT_FOUND',
      );
      const read = await first.call('/transaction/get', { external_id: 'mine' });
      expect(read.body.transaction).toMatchObject({
        state: 'AWAITING_CONFIRM',
        result_code: 'SUCCESS',
      });
    });

    it("a refund cannot name another terminal's purchase as its original", async () => {
      const { first, second } = await twoTerminals();
      await first.call('/transaction/confirm', { external_id: 'mine', result_code: 'SUCCESS' });
      const refund = await second.call('/transaction/refund', {
        external_id: 'steal',
        requested_amount: 100,
        currency: 'EUR',
        original_purchase_external_id: 'mine',
        original_purchase_terminal_id: first.terminalId,
      });
      expectError(refund, 400, 'ORIGINAL_PURCHASE_NOT_FOUND');
    });

    it('events and webhooks of another terminal are out of reach', async () => {
      const { first, second, intrude } = await twoTerminals();
      expectError(
        await intrude('/event/list', { filter: { subject: { eq: first.terminalId } } }),
        400,
        'TERMINAL_NOT_FOUND',
      );
      // A read filtered by type only covers the credential's own terminal.
      const own = await second.call('/event/list', {
        filter: { type: { eq: 'eu.vendor.api.pos.v0.Transaction' } },
        limit: 1000,
      });
      expect(own.status).toBe(200);
      const subjects = (
        own.body.events as Array<{ subject?: string; data: { terminal_id?: string } }>
      ).map((e) => e.data.terminal_id ?? e.subject);
      expect(subjects).not.toContain(first.terminalId);
      // The first terminal does see its own purchase.
      const mine = await first.call('/event/list', {
        filter: { type: { eq: 'eu.vendor.api.pos.v0.Transaction' } },
        limit: 1000,
      });
      expect(
        (mine.body.events as Array<{ data: { external_id?: string } }>).map(
          (e) => e.data.external_id,
        ),
      ).toContain('mine');

      const hook = await first.call('/webhook/create', { url: 'https://receiver.invalid/hooks' });
      expect(hook.status).toBe(200);
      const id = hook.body.webhook.id as string;
      const listed = await second.call('/webhook/list', {});
      expect(listed.status).toBe(200);
      expect((listed.body.webhooks as Array<{ id: string }>).map((w) => w.id)).not.toContain(id);
      expectError(await second.call('/webhook/delete', { id }), 404, 'WEBHOOK_NOT_FOUND');
      expectError(await second.call('/webhook/enable', { id }), 404, 'WEBHOOK_NOT_FOUND');
      expectError(await second.call('/webhook/disable', { id }), 404, 'WEBHOOK_NOT_FOUND');
      expect((await first.call('/webhook/delete', { id })).status).toBe(200);
    });

    it('the account credential reaches every simulator of the account', async () => {
      const { first, second } = await twoTerminals();
      const account = relay.account;
      for (const terminalId of [first.terminalId, second.terminalId]) {
        const status = await post(
          relay.baseUrl,
          revision,
          '/terminal/status',
          { terminal_id: terminalId },
          account,
        );
        expect(status.status).toBe(200);
        expect(status.body.status.transaction_state).toBeDefined();
        const list = await post(
          relay.baseUrl,
          revision,
          '/transaction/unconfirmed',
          { terminal_id: terminalId },
          account,
        );
        expect(list.status).toBe(200);
      }
      const read = await post(
        relay.baseUrl,
        revision,
        '/transaction/get',
        { terminal_id: first.terminalId, external_id: 'mine' },
        account,
      );
      expect(read.status).toBe(200);
      expect(read.body.transaction.external_id).toBe('mine');
    });

    it('a terminal credential cannot create simulators or terminals, nor revoke or rotate (403 FORBIDDEN)', async () => {
      const { first } = await twoTerminals();
      const bodies: Record<string, object> = {
        '/simulator/create': {},
        '/terminal/create': {},
        '/credential/revoke': { username: first.credential.username },
        '/credential/rotate': { username: first.credential.username },
      };
      for (const [operation, body] of Object.entries(bodies)) {
        const res = await post(relay.baseUrl, revision, operation, body, first.credential);
        expectError(res, 403, 'FORBIDDEN');
      }
    });
  });
});

describe('the log', () => {
  it('holds neither passwords, Authorization values nor card data after a purchase and a failed login', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    });
    const config = loadCloudConfig(
      {},
      {},
      {
        host: '127.0.0.1',
        port: 0,
        mqttPort: 0,
        dataDir: tempDataDir(),
        accountUsername: TEST_ACCOUNT.username,
        accountPassword: TEST_ACCOUNT.password,
        simulatorDelayMs: 20,
        defaultSimulator: false,
        logLevel: 'trace',
      },
    );
    // The relay's own logger options (as in production), at the most talkative level.
    const relay = await startRelay(config, { logger: pino(loggerOptions('trace'), sink) });
    try {
      const created = await post(relay.baseUrl, 'v1', '/simulator/create', {}, TEST_ACCOUNT);
      expect(created.status).toBe(200);
      const sim = created.body as SimulatorCreateResponse;
      const credential: Credential = { username: sim.username, password: sim.password };
      const call = (operation: string, body: Record<string, unknown>) =>
        post(relay.baseUrl, 'v1', operation, { terminal_id: sim.terminal_id, ...body }, credential);

      // 100021: a success that also carries a customer identity (tokens, PAR).
      const purchase = await call('/transaction/purchase', {
        external_id: 'log-1',
        requested_amount: 100021,
        currency: 'EUR',
        metadata: { note: 'log check' },
        options: { wait_seconds: 10 },
      });
      expect(purchase.status).toBe(200);
      const txn = purchase.body.transaction;
      expect(txn.state).toBe('AWAITING_CONFIRM');
      await call('/terminal/print', { contents: smallPngBase64(), format: 'PNG' });
      await call('/transaction/confirm', { external_id: 'log-1', result_code: 'SUCCESS' });
      await call('/transaction/get', { external_id: 'log-1' });
      const wrongPassword = 'wrong-password-for-the-log-check';
      const failed = await post(
        relay.baseUrl,
        'v1',
        '/terminal/status',
        { terminal_id: sim.terminal_id },
        { username: sim.username, password: wrongPassword },
      );
      expect(failed.status).toBe(401);

      const log = lines.join('');
      expect(log.length).toBeGreaterThan(0);
      const secrets: Record<string, string> = {
        'account password': TEST_ACCOUNT.password,
        'simulator password': sim.password,
        'wrong password': wrongPassword,
        'account Authorization value': basicAuth(TEST_ACCOUNT).slice('Basic '.length),
        'simulator Authorization value': basicAuth(credential).slice('Basic '.length),
        'failed Authorization value': basicAuth({
          username: sim.username,
          password: wrongPassword,
        }).slice('Basic '.length),
        card_number_customer: txn.payment_method_details.card_number_customer,
        card_number_merchant: txn.payment_method_details.card_number_merchant,
        par_value: txn.customer_identity.par.par_value,
        'card token a': txn.customer_identity.tokenprovider_a.card_token,
        'card token b': txn.customer_identity.tokenprovider_b.card_token,
        'print contents': smallPngBase64(),
      };
      const leaked = Object.entries(secrets)
        .filter(([, value]) => typeof value === 'string' && value.length > 0 && log.includes(value))
        .map(([name]) => name);
      expect(leaked).toEqual([]);
    } finally {
      await relay.close();
    }
  });
});
