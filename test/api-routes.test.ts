/**
 * Methods and routes over real HTTP: every operation is POST only (405 with `Allow: POST`
 * and the error object otherwise), and a path with no operation answers 404 with the
 * error object.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPERATION_PATHS, REVISIONS, expectError, send } from './support/api.js';
import { basicAuth, startTestRelay, type TestRelay } from './support/relay.js';

const METHODS = ['GET', 'PUT', 'DELETE', 'PATCH'] as const;

const TABLE = REVISIONS.flatMap((revision) =>
  OPERATION_PATHS.flatMap((operation) =>
    METHODS.map((method) => ({ revision, operation, method })),
  ),
);

describe('methods and routes', () => {
  let relay: TestRelay;
  let authorization: string;
  beforeAll(async () => {
    relay = await startTestRelay();
    authorization = basicAuth(relay.account);
  });
  afterAll(async () => {
    await relay.close();
  });

  it.each(TABLE)(
    '$method /pos/$revision$operation answers 405 with Allow: POST',
    async ({ revision, operation, method }) => {
      const res = await send(relay.baseUrl, revision, operation, {
        method,
        // As a client sends them: GET and DELETE without a body, PUT and PATCH with JSON.
        headers:
          method === 'GET' || method === 'DELETE'
            ? { authorization }
            : { authorization, 'content-type': 'application/json' },
        ...(method === 'GET' || method === 'DELETE' ? {} : { body: '{}' }),
      });
      expectError(res, 405, 'METHOD_NOT_ALLOWED');
      expect(res.headers.get('allow')).toBe('POST');
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    },
  );

  describe.each(REVISIONS)('the wrong method wins over whatever else is wrong (%s)', (revision) => {
    const json = { 'content-type': 'application/json' };
    it.each([
      ['PUT', 'no credentials', {}, '{}'],
      ['PUT', 'a body that is not JSON', { authorization: true, ...json }, '{"broken":'],
      ['PATCH', 'a text/plain body', { authorization: true, 'content-type': 'text/plain' }, 'hi'],
      [
        'PUT',
        'an application/xml body',
        { authorization: true, 'content-type': 'application/xml' },
        '<a/>',
      ],
      ['DELETE', 'content-type JSON and no body', { authorization: true, ...json }, undefined],
    ] as const)('%s with %s answers 405', async (method, _label, headers, body) => {
      const { authorization: withCredential, ...rest } = headers as Record<string, unknown>;
      const res = await send(relay.baseUrl, revision, '/transaction/purchase', {
        method,
        headers: {
          ...(rest as Record<string, string>),
          ...(withCredential ? { authorization } : {}),
        },
        ...(body !== undefined ? { body } : {}),
      });
      expectError(res, 405, 'METHOD_NOT_ALLOWED');
      expect(res.headers.get('allow')).toBe('POST');
    });
  });

  it.each([
    ['/pos/v1/transaction/nope', 'POST'],
    ['/pos/v0/transaction/nope', 'POST'],
    ['/pos/v2/transaction/purchase', 'POST'],
    ['/pos/transaction/purchase', 'POST'],
    ['/pos/v1/transaction/purchase/extra', 'POST'],
    ['/pos/v1/Transaction/Purchase', 'POST'],
    ['/pos/v1/transaction/purchase/', 'POST'],
    ['/pos/v1/openapi.json/extra', 'GET'],
    // `/` leads to the console (console-http.test.ts); a path beside it is no route.
    ['/nothing-here', 'GET'],
    ['/pos/v1/', 'GET'],
    ['/pos/v1/unknown', 'DELETE'],
  ])('%s (%s) answers 404 with the error object', async (path, method) => {
    const response = await fetch(`${relay.baseUrl.replace(/\/pos$/, '')}${path}`, {
      method,
      headers: {
        authorization,
        ...(method === 'POST' ? { 'content-type': 'application/json' } : {}),
      },
      ...(method === 'POST' ? { body: '{}' } : {}),
    });
    const text = await response.text();
    const res = { status: response.status, body: JSON.parse(text) as unknown, text };
    const error = expectError(res, 404, 'ROUTE_NOT_FOUND');
    expect(error.description).toContain(path.split('?')[0]!);
  });

  it.each(REVISIONS)('an unknown path answers 404 before authentication (%s)', async (revision) => {
    const res = await send(relay.baseUrl, revision, '/transaction/cancel', {
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    expectError(res, 404, 'ROUTE_NOT_FOUND');
  });
});
