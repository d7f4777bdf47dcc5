/**
 * Waits and connections a client may hold: parked long polls and event waits are capped
 * per credential (429 with Retry-After beyond), a request must arrive whole in time (408
 * with the error object), and the API holds a bounded number of connections.
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { expectError, expectErrorObject } from './support/api.js';
import { post, posFor, startTestRelay, type TestRelay } from './support/relay.js';

let relay: TestRelay | undefined;
afterEach(async () => {
  await relay?.close();
  relay = undefined;
});

async function until(check: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Raw bytes to the API; answers what came back before the relay closed the connection. */
function raw(baseUrl: string, write: (socket: net.Socket) => void): Promise<string> {
  const { port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1', () => write(socket));
    let received = '';
    socket.on('data', (chunk) => (received += chunk.toString('latin1')));
    socket.on('close', () => resolve(received));
    socket.on('error', reject);
  });
}

function parseResponse(text: string) {
  const [head = '', body = ''] = text.split('\r\n\r\n');
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
  return { status, body: body ? JSON.parse(body) : undefined, text };
}

describe('parked waits per credential', () => {
  it('refuses one wait beyond the cap with 429 and the error object, and frees a wait when its client leaves', async () => {
    relay = await startTestRelay({ maxParkedPerCredential: 2, simulatorDelayMs: 600_000 });
    const pos = posFor(relay, await relay.newSimulator());
    const started = await pos.call('/transaction/purchase', {
      external_id: 'slow',
      requested_amount: 100,
      currency: 'EUR',
      wait_seconds: 0,
    });
    expect(started.body.transaction.state).toBe('PROCESSING');

    // Transaction events only, after those so far: none comes while the payment runs.
    const { next_token } = (
      await pos.call('/event/list', {
        filter: { type: { eq: 'eu.vendor.api.pos.v0.Transaction' } },
        limit: 1000,
      })
    ).body;
    const leaving = new AbortController();
    const parked = [
      post(
        relay.baseUrl,
        'v1',
        '/transaction/get',
        { terminal_id: pos.terminalId, external_id: 'slow', wait_seconds: 60 },
        pos.credential,
        { signal: leaving.signal },
      ).catch(() => undefined),
      post(relay.baseUrl, 'v1', '/event/list', { wait_seconds: 60, next_token }, pos.credential, {
        signal: leaving.signal,
      }).catch(() => undefined),
    ];
    await until(() => relay!.service.feed.size + relayEventWaits(relay!) === 2);

    const third = await pos.call('/transaction/get', { external_id: 'slow', wait_seconds: 3 });
    expectError(third, 429, 'TOO_MANY_REQUESTS');
    expect(third.headers.get('retry-after')).toBe('1');
    expectError(
      await pos.call('/event/list', { wait_seconds: 5, next_token }),
      429,
      'TOO_MANY_REQUESTS',
    );
    // A purchase that would wait is refused before it is made.
    expectError(
      await pos.call('/transaction/purchase', {
        external_id: 'refused',
        requested_amount: 100,
        currency: 'EUR',
        wait_seconds: 30,
      }),
      429,
      'TOO_MANY_REQUESTS',
    );
    expectError(
      await pos.call('/transaction/get', { external_id: 'refused', wait_seconds: 0 }),
      404,
      'NOT_FOUND',
    );
    // Reads that do not wait, and another credential's waits, are not affected.
    const read = await pos.call('/transaction/get', { external_id: 'slow', wait_seconds: 0 });
    expect(read.status).toBe(200);
    const account = await post(
      relay.baseUrl,
      'v1',
      '/transaction/get',
      { terminal_id: pos.terminalId, external_id: 'slow', wait_seconds: 1 },
      relay.account,
    );
    expect(account.status).toBe(200);

    leaving.abort();
    await Promise.all(parked);
    await until(() => relay!.service.feed.size + relayEventWaits(relay!) === 0);
    const again = await pos.call('/transaction/get', { external_id: 'slow', wait_seconds: 1 });
    expect(again.status).toBe(200);
  });
});

/** Event waits parked on the relay, read from its metrics. */
function relayEventWaits(r: TestRelay): number {
  return (r.events as unknown as { options: { feed: { size: number } } }).options.feed.size;
}

describe('slow requests and connections', () => {
  it('answers 408 with the error object to headers that do not arrive in time, and closes', async () => {
    relay = await startTestRelay({ httpHeadersTimeoutS: 1, httpRequestTimeoutS: 2 });
    const text = await raw(relay.baseUrl, (socket) =>
      socket.write('POST /v1/transaction/get HTTP/1.1\r\nHost: relay\r\nX-Slow: '),
    );
    const response = parseResponse(text);
    expectError(response, 408, 'REQUEST_TIMEOUT');
  });

  it('answers 408 to a body trickled past the request time-out, and closes', async () => {
    relay = await startTestRelay({ httpHeadersTimeoutS: 1, httpRequestTimeoutS: 1 });
    const text = await raw(relay.baseUrl, (socket) =>
      socket.write(
        'POST /v1/transaction/get HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\n' +
          'Content-Length: 100\r\n\r\n{"terminal_id":',
      ),
    );
    expectErrorObject(parseResponse(text));
    expect(parseResponse(text).status).toBe(408);
  });

  it('a long poll longer than the request time-out is answered, not cut', async () => {
    relay = await startTestRelay({ httpHeadersTimeoutS: 1, httpRequestTimeoutS: 1 });
    const res = await post(relay.baseUrl, 'v1', '/event/list', { wait_seconds: 2 }, relay.account);
    expect(res.status).toBe(200);
  });

  it('closes a connection beyond the limit at once, and serves again when one leaves', async () => {
    relay = await startTestRelay({ httpMaxConnections: 2 });
    const { port } = new URL(relay.baseUrl);
    const held = await Promise.all(
      [0, 1].map(
        () =>
          new Promise<net.Socket>((resolve) => {
            const socket = net.connect(Number(port), '127.0.0.1');
            // A full request and its answer: the relay has counted this connection.
            socket.write('GET /health HTTP/1.1\r\nHost: relay\r\n\r\n');
            socket.once('data', () => resolve(socket));
          }),
      ),
    );
    const refused = await raw(relay.baseUrl, (socket) =>
      socket.write('GET /health HTTP/1.1\r\nHost: relay\r\n\r\n'),
    );
    expect(refused).toBe('');
    held[0]!.destroy();
    // The relay counts the connection gone once it has seen it close.
    let served = '';
    for (let tries = 0; served === '' && tries < 100; tries++) {
      served = await raw(relay.baseUrl, (socket) =>
        socket.write('GET /health HTTP/1.1\r\nHost: relay\r\nConnection: close\r\n\r\n'),
      );
    }
    expect(served).toMatch(/^HTTP\/1\.1 200/);
    held[1]!.destroy();
  });
});
