/** How answers become values or TpsErrors: the part of the transport that needs no network. */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { TpsError } from './errors.js';
import { interpret, lenientParser } from './http.js';

const exchange = {
  operation: '/transaction/get',
  parse: lenientParser<{ ok: boolean }>(
    '/transaction/get',
    z.object({ ok: z.literal(true) }),
    z.object({ ok: z.boolean() }),
  ),
};
const headers = (h: Record<string, string> = {}) => new Headers(h);
const fail = (status: number, body: string, h: Record<string, string> = {}) => {
  try {
    interpret(status, headers(h), body, exchange, 0);
  } catch (error) {
    return error as TpsError;
  }
  throw new Error('no error');
};

describe('interpret', () => {
  it('answers the parsed body of a 2xx', () => {
    expect(interpret(200, headers(), '{"ok":true}', exchange, 0)).toEqual({ ok: true });
  });

  it('keeps a body the exact schema refuses when the loose one accepts it (a newer service)', () => {
    expect(interpret(200, headers(), '{"ok":false,"new":1}', exchange, 0)).toEqual({
      ok: false,
      new: 1,
    });
  });

  it('refuses a 2xx that is not what the operation promises', () => {
    expect(fail(200, 'not json')).toMatchObject({ code: 'INVALID_RESPONSE', retryable: false });
    expect(fail(200, '{"ok":"yes"}')).toMatchObject({ code: 'INVALID_RESPONSE' });
  });

  it('carries the error object code, description and status; a 4xx is not repeated', () => {
    const error = fail(
      400,
      '{"error":{"code":"TERMINAL_BUSY","description":"terminal t-1 is busy"}}',
    );
    expect(error).toBeInstanceOf(TpsError);
    expect(error).toMatchObject({
      code: 'TERMINAL_BUSY',
      status: 400,
      description: 'terminal t-1 is busy',
      network: false,
      timeout: false,
      retryable: false,
      operation: '/transaction/get',
    });
  });

  it('repeats 5xx, 429 and 408, honouring Retry-After', () => {
    expect(
      fail(503, '{"error":{"code":"SERVICE_UNAVAILABLE"}}', { 'retry-after': '2' }),
    ).toMatchObject({ code: 'SERVICE_UNAVAILABLE', retryable: true, retryAfterMs: 2000 });
    expect(fail(500, '')).toMatchObject({ code: 'HTTP_ERROR', status: 500, retryable: true });
    expect(fail(502, '<html>bad gateway</html>')).toMatchObject({
      code: 'HTTP_ERROR',
      retryable: true,
    });
    expect(fail(429, '{}')).toMatchObject({ retryable: true });
    expect(fail(408, '{}')).toMatchObject({ retryable: true });
  });
});

describe('TpsError', () => {
  it('flags network errors and time-outs as repeatable, aborts as not', () => {
    expect(new TpsError({ code: 'NETWORK_ERROR', network: true, message: 'x' }).retryable).toBe(
      true,
    );
    expect(new TpsError({ code: 'TIMEOUT', timeout: true, message: 'x' }).retryable).toBe(true);
    expect(new TpsError({ code: 'ABORTED', aborted: true, message: 'x' }).retryable).toBe(false);
  });

  it('renders as JSON without stack or cause', () => {
    const error = new TpsError({
      code: 'INVALID_STATE',
      status: 400,
      description: 'd',
      message: 'm',
      cause: new Error('inner'),
    }).forPayment('order-1');
    expect(JSON.parse(JSON.stringify(error))).toEqual({
      code: 'INVALID_STATE',
      message: 'm',
      status: 400,
      description: 'd',
      external_id: 'order-1',
      network: false,
      timeout: false,
      aborted: false,
      retryable: false,
    });
  });
});
