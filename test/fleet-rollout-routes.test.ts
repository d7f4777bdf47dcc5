/**
 * The rollout operations over HTTP, for what the operator or a stranger sends wrong: each
 * refusal is the error object of docs/errors.md, never a 500.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, startTestRelay, type TestRelay } from './support/relay.js';

describe('rollout operations', () => {
  let relay: TestRelay;
  let terminal: { username: string; password: string };

  beforeAll(async () => {
    relay = await startTestRelay();
    const created = await post(relay.baseUrl, 'v1', '/terminal/create', {}, relay.account);
    const body = created.body as { username: string; password: string };
    terminal = { username: body.username, password: body.password };
  });
  afterAll(async () => {
    await relay?.close();
  });

  const start = (body: unknown, who = relay.operator) =>
    post(relay.baseUrl, 'v1', '/fleet/rollouts', body, who);
  const read = async (path: string, who?: { username: string; password: string }) => {
    const response = await fetch(`${relay.baseUrl}/v1/fleet/rollouts${path}`, {
      headers: who
        ? {
            authorization: `Basic ${Buffer.from(`${who.username}:${who.password}`).toString('base64')}`,
          }
        : {},
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  const named = (body: object) => ({ account_id: relay.bootstrap.accountId, ...body });

  it.each([
    ['no version', { cohort: 'cohort-north' }],
    ['a cohort that is no cohort id', { version: '1.0.0', cohort: 'north' }],
    ['an unknown member', { version: '1.0.0', cohort: 'cohort-north', waves: 5 }],
    ['a share over 100 %', { version: '1.0.0', cohort: 'cohort-north', share_percent: 101 }],
    ['a deadline under 10 s', { version: '1.0.0', cohort: 'cohort-north', deadline_s: 1 }],
    ['an account_id that is none', { version: '1.0.0', cohort: 'cohort-north', account_id: 'x' }],
  ])('%s: 400 INVALID_REQUEST', async (_what, body) => {
    const answer = await start(named(body));
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ error: { code: 'INVALID_REQUEST' } });
  });

  it.each([
    ['no JSON object', 'start'],
    ['no account_id', { version: '1.0.0', cohort: 'cohort-north' }],
  ])('%s: 400 INVALID_REQUEST', async (_what, body) => {
    const answer = await start(body);
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ error: { code: 'INVALID_REQUEST' } });
  });

  it('a release never published: 404 RELEASE_NOT_FOUND, nothing started', async () => {
    const answer = await start(named({ version: '9.9.9', cohort: 'cohort-north' }));
    expect(answer.status).toBe(404);
    expect(answer.body).toMatchObject({ error: { code: 'RELEASE_NOT_FOUND' } });
    expect((await read('', relay.operator)).body).toEqual({ rollouts: [] });
  });

  it('an account that is not a merchant’s: 404 NOT_FOUND', async () => {
    for (const accountId of ['acct-nobody', relay.bootstrap.operatorAccountId]) {
      const answer = await start({
        account_id: accountId,
        version: '1.0.0',
        cohort: 'cohort-north',
      });
      expect(answer.status).toBe(404);
      expect(answer.body).toMatchObject({ error: { code: 'NOT_FOUND' } });
    }
  });

  it('unknown rollouts: 404 ROLLOUT_NOT_FOUND, for reading, pausing and resuming', async () => {
    expect((await read('/ro-none', relay.operator)).body).toMatchObject({
      error: { code: 'ROLLOUT_NOT_FOUND' },
    });
    expect((await read('/not%20an%20id', relay.operator)).status).toBe(404);
    for (const action of ['pause', 'resume']) {
      const answer = await post(
        relay.baseUrl,
        'v1',
        `/fleet/rollouts/ro-none/${action}`,
        {},
        relay.operator,
      );
      expect(answer.status).toBe(404);
      expect(answer.body).toMatchObject({ error: { code: 'ROLLOUT_NOT_FOUND' } });
    }
  });

  it('a merchant or a terminal credential: 403 FORBIDDEN, before the body is read; none or a wrong one: 401', async () => {
    for (const body of [named({ version: '1.0.0', cohort: 'cohort-north' }), 'start']) {
      for (const who of [terminal, relay.account]) {
        const answer = await start(body, who);
        expect(answer.status).toBe(403);
        expect(answer.body).toMatchObject({ error: { code: 'FORBIDDEN' } });
      }
    }
    expect((await read('', terminal)).status).toBe(403);
    expect((await read('?account_id=x', terminal)).status).toBe(403);
    expect((await read('')).status).toBe(401);
    expect((await read('', { username: relay.account.username, password: 'wrong' })).status).toBe(
      401,
    );
  });
});
