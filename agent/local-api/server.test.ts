/**
 * The local API over real HTTP on an ephemeral port, in front of the local engine on a
 * real journal file and a scripted reader: the spec's answers, and hostile requests met
 * with the spec's error object.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ErrorResponse } from '../../protocol/errors.js';
import { pairTransactionId } from '../../protocol/transaction-rules/pair-id.js';
import { Executor } from '../executor.js';
import { Journal } from '../journal.js';
import { LocalEngine } from '../local/engine.js';
import { ScriptedReader } from '../testing/scripted-reader.js';
import type { LocalApiAuthenticator } from './authenticator.js';
import { startLocalApi, type LocalApiLimits } from './server.js';

const TERMINAL = 't-1000000001';
const AUTH = `Basic ${Buffer.from('pos-1:secret-1').toString('base64')}`;
const LIMITED = `Basic ${Buffer.from('limited:x').toString('base64')}`;

/** One fixed credential; LIMITED stands for a source over its sign-in limit. */
const fixedCredential: LocalApiAuthenticator = {
  async check(authorization) {
    if (authorization === AUTH) return { ok: true, username: 'pos-1' };
    if (authorization === LIMITED) {
      return { ok: false, status: 429, retryAfterSeconds: 7 };
    }
    return { ok: false, status: 401 };
  },
};

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
});

async function setup(limits: Partial<LocalApiLimits> = {}) {
  const journal = Journal.open(mkdtempSync(path.join(tmpdir(), 'agent-local-api-')));
  const reader = new ScriptedReader();
  const logger = pino({ level: 'silent' });
  const clock = { now: () => new Date() };
  const timers = {
    setTimeout: (callback: () => void, ms: number) => setTimeout(callback, ms),
    clearTimeout: (handle: unknown) => clearTimeout(handle as NodeJS.Timeout),
  };
  const executor = new Executor({
    journal,
    reader,
    clock,
    timers,
    logger,
    ack: () => {},
    reported: () => {},
  });
  const engine = new LocalEngine({
    terminalId: TERMINAL,
    journal,
    executor,
    clock,
    timers,
    logger,
    settings: { maxUnconfirmed: 5, startTtlMs: 30_000, pauseTimeoutMs: 60_000, gracePeriodMs: 0 },
    reported: () => {},
  });
  engine.start();
  const api = await startLocalApi({
    host: '127.0.0.1',
    port: 0,
    tls: undefined,
    authenticator: fixedCredential,
    engine,
    status: () =>
      ({
        state: 'CONNECTED',
        transaction_state: 'READY',
        battery_percentage: 80,
        plugged_in: true,
      }) as never,
    logger,
    limits,
  });
  closers.push(async () => {
    await api.close();
    engine.stop();
    await executor.stop();
    journal.close();
  });
  const post = async (
    op: string,
    body: unknown,
    init: { revision?: string; auth?: string; type?: string; raw?: string } = {},
  ) => {
    const response = await fetch(`${api.url}/pos/${init.revision ?? 'v1'}${op}`, {
      method: 'POST',
      headers: {
        ...(init.auth !== '' ? { authorization: init.auth ?? AUTH } : {}),
        'content-type': init.type ?? 'application/json',
      },
      body: init.raw ?? JSON.stringify(body),
    });
    // The answers are checked by the assertions that read them.
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    const answer: any = await response.json();
    return { status: response.status, headers: response.headers, body: answer };
  };
  return { api, engine, reader, post };
}

const purchase = (externalId: string, extra: object = {}) => ({
  terminal_id: TERMINAL,
  external_id: externalId,
  requested_amount: 1000,
  currency: 'EUR',
  wait_seconds: 0,
  ...extra,
});

/** Lets the event loop turn until `done` holds: no clock involved. */
async function until(done: () => boolean) {
  while (!done()) await new Promise((resolve) => setImmediate(resolve));
}

describe('local API', () => {
  it('pays: purchase, a get that waits for the result, confirm', async () => {
    const t = await setup();
    const created = await t.post('/transaction/purchase', purchase('order-1'));
    const id = pairTransactionId(TERMINAL, 'order-1');
    expect(created).toMatchObject({
      status: 200,
      body: { transaction: { id, state: 'PROCESSING' } },
    });

    const waiting = t.post('/transaction/get', {
      terminal_id: TERMINAL,
      external_id: 'order-1',
      wait_seconds: 60,
    });
    await until(() => t.engine.listenerCount('changed') === 1);
    t.reader.emit('result', { transaction_id: id, phase: 'COMPLETED', result_code: 'SUCCESS' });
    expect((await waiting).body.transaction).toMatchObject({
      id,
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
    });

    const unconfirmed = await t.post('/transaction/unconfirmed', { terminal_id: TERMINAL });
    expect(unconfirmed.body.transactions.map((txn: { id: string }) => txn.id)).toEqual([id]);
    const confirmed = await t.post('/transaction/confirm', {
      terminal_id: TERMINAL,
      external_id: 'order-1',
      result_code: 'SUCCESS',
    });
    expect(confirmed.body.transaction.state).toBe('COMMITTED');
    const v0 = await t.post(
      '/transaction/get',
      { terminal_id: TERMINAL, external_id: 'order-1' },
      { revision: 'v0' },
    );
    expect(v0.body.transaction).toMatchObject({ id, state: 'COMMITTED' });
    const withAmounts = await t.post('/transaction/get', {
      terminal_id: TERMINAL,
      external_id: 'order-1',
      options: { extra_amounts: true },
    });
    expect(withAmounts.body.transaction.extra_amounts).toEqual({ refundable_amount: 1000 });
    expect(t.reader.of('start')).toHaveLength(1);
  });

  it('answers a repeated create with the same transaction, another amount 400 IDEMPOTENCY_MISMATCH', async () => {
    const t = await setup();
    const first = await t.post('/transaction/purchase', purchase('order-1'));
    const again = await t.post('/transaction/purchase', purchase('order-1'));
    expect(again.body.transaction.id).toBe(first.body.transaction.id);
    const other = await t.post(
      '/transaction/purchase',
      purchase('order-1', { requested_amount: 7 }),
    );
    expect(other.status).toBe(400);
    expect(other.body.error.code).toBe('IDEMPOTENCY_MISMATCH');
  });

  it('answers another terminal as one that does not exist', async () => {
    const t = await setup();
    const other = 't-2000000002';
    const create = await t.post('/transaction/purchase', purchase('o', { terminal_id: other }));
    expect([create.status, create.body.error.code]).toEqual([400, 'TERMINAL_NOT_FOUND']);
    const get = await t.post('/transaction/get', { terminal_id: other, external_id: 'o' });
    expect([get.status, get.body.error.code]).toEqual([404, 'NOT_FOUND']);
    const list = await t.post('/transaction/unconfirmed', { terminal_id: other });
    expect([list.status, list.body.error.code]).toEqual([404, 'NOT_FOUND']);
    const status = await t.post('/terminal/status', { terminal_id: other });
    expect([status.status, status.body.error.code]).toEqual([400, 'TERMINAL_NOT_FOUND']);
    const own = await t.post('/terminal/status', { terminal_id: TERMINAL });
    expect(own.status).toBe(200);
  });

  it('refuses a missing or wrong credential 401, a limited source 429 with Retry-After', async () => {
    const t = await setup();
    const none = await t.post('/transaction/purchase', purchase('o'), { auth: '' });
    expect([none.status, none.body.error.code]).toEqual([401, 'UNAUTHORIZED']);
    expect(none.headers.get('www-authenticate')).toMatch(/^Basic/);
    const limited = await t.post('/transaction/purchase', purchase('o'), {
      auth: LIMITED,
    });
    expect([limited.status, limited.headers.get('retry-after')]).toEqual([429, '7']);
    expect(t.engine.get(TERMINAL, 'o')).toBeUndefined();
  });

  it('meets hostile requests with a 4xx and the error object, never a 500', async () => {
    const t = await setup({ bodyBytes: 4096 });
    const cases: Array<[string, unknown, Parameters<typeof t.post>[2], number, string]> = [
      ['/transaction/purchase', undefined, { raw: '{"terminal_id":' }, 400, 'INVALID_JSON'],
      [
        '/transaction/purchase',
        purchase('o'),
        { type: 'text/plain' },
        415,
        'UNSUPPORTED_MEDIA_TYPE',
      ],
      [
        '/transaction/purchase',
        { ...purchase('o'), pad: 'x'.repeat(5000) },
        {},
        413,
        'BODY_TOO_LARGE',
      ],
      [
        '/transaction/purchase',
        purchase('o', { requested_amount: -1 }),
        {},
        400,
        'INVALID_REQUEST',
      ],
      ['/transaction/purchase', null, {}, 400, 'INVALID_REQUEST'],
      ['/transaction/purchase', [1, 2], {}, 400, 'INVALID_REQUEST'],
      ['/transaction/confirm', { terminal_id: TERMINAL }, {}, 400, 'INVALID_REQUEST'],
      ['/transaction/get', { terminal_id: TERMINAL, external_id: 'none' }, {}, 404, 'NOT_FOUND'],
      ['/transaction/search', {}, {}, 404, 'ROUTE_NOT_FOUND'],
      ['/transaction/purchase', purchase('o'), { revision: 'v9' }, 404, 'ROUTE_NOT_FOUND'],
      [
        '/transaction/confirm',
        { terminal_id: TERMINAL, external_id: 'none', result_code: 'SUCCESS' },
        {},
        400,
        'TRANSACTION_NOT_FOUND',
      ],
    ];
    for (const [op, body, init, status, code] of cases) {
      const answer = await t.post(op, body, init);
      expect({ op, status: answer.status, code: answer.body.error?.code }).toEqual({
        op,
        status,
        code,
      });
      expect(ErrorResponse.safeParse(answer.body).success).toBe(true);
    }
    const get = await fetch(`${t.api.url}/pos/v1/transaction/get`, {
      headers: { authorization: AUTH },
    });
    expect([get.status, get.headers.get('allow')]).toEqual([405, 'POST']);
    expect(t.engine.unconfirmed()).toEqual([]);
  });

  it('holds long polls to their bound: a read beyond it is refused 429', async () => {
    const t = await setup({ maxParked: 1 });
    await t.post('/transaction/purchase', purchase('order-1'));
    const get = { terminal_id: TERMINAL, external_id: 'order-1', wait_seconds: 60 };
    const parked = t.post('/transaction/get', get);
    await until(() => t.engine.listenerCount('changed') === 1);
    const refused = await t.post('/transaction/get', get);
    expect([refused.status, refused.body.error.code]).toEqual([429, 'TOO_MANY_REQUESTS']);
    t.reader.emit('result', {
      transaction_id: pairTransactionId(TERMINAL, 'order-1'),
      phase: 'COMPLETED',
      result_code: 'SUCCESS',
    });
    expect((await parked).body.transaction.state).toBe('AWAITING_CONFIRM');
    expect(t.engine.listenerCount('changed')).toBe(0);
  });
});
