/**
 * Request ids: a caller's `x-request-id` follows its request and comes back; without one
 * (or with one that is not an id) the relay makes one that no other relay makes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { basicAuth, startTestRelay, TEST_ACCOUNT, type TestRelay } from './support/relay.js';

describe('request ids', () => {
  let relay: TestRelay;
  beforeAll(async () => {
    relay = await startTestRelay();
  });
  afterAll(async () => {
    await relay.close();
  });

  const list = (headers: Record<string, string> = {}, credential = TEST_ACCOUNT) =>
    fetch(`${relay.baseUrl}/v1/webhook/list`, {
      method: 'POST',
      headers: {
        authorization: basicAuth(credential),
        'content-type': 'application/json',
        ...headers,
      },
      body: '{}',
    });

  it('echoes the caller’s x-request-id, on success and on error', async () => {
    const ok = await list({ 'x-request-id': 'pos-7f3a:42' });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('x-request-id')).toBe('pos-7f3a:42');
    const refused = await list(
      { 'x-request-id': 'pos-7f3a:43' },
      { username: TEST_ACCOUNT.username, password: 'wrong-password' },
    );
    expect(refused.status).toBe(401);
    expect(refused.headers.get('x-request-id')).toBe('pos-7f3a:43');
  });

  it('makes a unique id when there is none, or when the given one is not an id', async () => {
    const answers = await Promise.all([
      list(),
      list(),
      list({ 'x-request-id': 'x'.repeat(500) }),
      list({ 'x-request-id': 'has "quotes" and spaces' }),
    ]);
    const ids = answers.map((a) => a.headers.get('x-request-id'));
    for (const id of ids)
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
