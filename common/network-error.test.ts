/** What a person reads when a request gets no answer, from real failures on loopback. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { unreachableText } from './network-error.js';

const servers: http.Server[] = [];
afterEach(() => {
  for (const server of servers.splice(0)) server.close();
});

async function listen(handler?: http.RequestListener): Promise<number> {
  const server = http.createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** A port that was free a moment ago: nobody listens there. */
async function deadPort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function failureOf(url: string, init?: RequestInit): Promise<unknown> {
  try {
    await fetch(url, init);
  } catch (error) {
    return error;
  }
  throw new Error(`${url} answered`);
}

describe('unreachableText', () => {
  it('names the address that refused and says ECONNREFUSED', async () => {
    const port = await deadPort();
    const url = `http://127.0.0.1:${port}/pos/v1/simulator/create`;
    expect(unreachableText(url, await failureOf(url))).toBe(
      `127.0.0.1:${port} refused the connection (ECONNREFUSED): nothing listens there`,
    );
  });

  it('says a TLS handshake failed, without OpenSSL source lines', async () => {
    const port = await listen((_, reply) => reply.end('plain'));
    const url = `https://127.0.0.1:${port}/pos/v1/x`;
    const text = unreachableText(url, await failureOf(url));
    expect(text).toMatch(
      new RegExp(`^TLS with https://127\\.0\\.0\\.1:${port} failed: .+ \\(ERR_SSL_`),
    );
    expect(text).not.toMatch(/openssl|\.c:\d+/);
  });

  it('says the server took the connection but did not answer in time', async () => {
    const port = await listen(() => undefined);
    const url = `http://127.0.0.1:${port}/pos/v1/x`;
    const error = await failureOf(url, { signal: AbortSignal.timeout(50) });
    expect(unreachableText(url, error)).toMatch(
      new RegExp(`^no answer from http://127\\.0\\.0\\.1:${port} in time`),
    );
  });

  it('names the host no address was found for (ENOTFOUND)', () => {
    const cause = Object.assign(new Error('getaddrinfo ENOTFOUND relay.invalid'), {
      code: 'ENOTFOUND',
      hostname: 'relay.invalid',
    });
    const error = new TypeError('fetch failed', { cause });
    expect(unreachableText('https://relay.invalid/pos/v1/x', error)).toBe(
      'no address found for relay.invalid (ENOTFOUND)',
    );
  });
});
