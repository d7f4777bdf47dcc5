/**
 * Guessing credentials costs the guesser, not the relay, and never locks the real user
 * out from elsewhere. Over real HTTP from several loopback addresses (127.0.0.x, all
 * routed to the relay on Linux): failed sign-ins are counted per (username, source), per
 * source and, as a high ceiling, per username, with 429 and Retry-After beyond; a known
 * and an unknown username cost the same; slow hashes at once are bounded (a quick 503
 * beyond); failures are counted in the metrics. The embedded broker throttles agents'
 * sign-ins the same way per terminal id and source.
 */
import http from 'node:http';
import net from 'node:net';
import { MqttClient } from 'mqtt';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ErrorResponse, terminalTopics } from '../protocol/index.js';
import { TEST_ACCOUNT, basicAuth, post, startTestRelay, type TestRelay } from './support/relay.js';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: unknown;
  ms: number;
}

/** POSTs /v1/terminal/status from a given local address, as a POS there would. */
function statusFrom(
  relay: TestRelay,
  source: string,
  credential: { username: string; password: string },
): Promise<Answer> {
  const url = new URL(`${relay.baseUrl}/v1/terminal/status`);
  const body = JSON.stringify({ terminal_id: 't-1900000000' });
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const request = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        localAddress: source,
        agent: false,
        headers: {
          authorization: basicAuth(credential),
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            body: text ? JSON.parse(text) : undefined,
            ms: performance.now() - started,
          }),
        );
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

const wrong = (username: string) => ({ username, password: 'not-the-password-at-all' });

function expectThrottled(answer: Answer, code = 'TOO_MANY_REQUESTS', status = 429) {
  expect(answer.status, JSON.stringify(answer.body)).toBe(status);
  const parsed = ErrorResponse.strict().parse(answer.body);
  expect(parsed.error.code).toBe(code);
  const retryAfter = Number(answer.headers['retry-after']);
  expect(Number.isInteger(retryAfter) && retryAfter >= 1, `Retry-After ${retryAfter}`).toBe(true);
  return retryAfter;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

async function metric(relay: TestRelay, series: string): Promise<number> {
  const text = await (await fetch(relay.baseUrl.replace(/\/pos$/, '/metrics'))).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

describe('sign-in failures over HTTP, with the default limits', () => {
  let relay: TestRelay;
  beforeAll(async () => {
    relay = await startTestRelay();
    // The account has signed in: its password is remembered, checked with one HMAC.
    const ok = await post(relay.baseUrl, 'v1', '/simulator/create', {}, TEST_ACCOUNT);
    expect(ok.status).toBe(200);
  }, 30_000);
  afterAll(async () => {
    await relay.close();
  });

  it('stops one source guessing one username after 10 failures (429, Retry-After), even for the right password', async () => {
    for (let i = 0; i < 10; i++) {
      const answer = await statusFrom(relay, '127.0.0.11', wrong(TEST_ACCOUNT.username));
      expect(answer.status, `attempt ${i + 1}`).toBe(401);
    }
    const retryAfter = expectThrottled(
      await statusFrom(relay, '127.0.0.11', wrong(TEST_ACCOUNT.username)),
    );
    expect(retryAfter).toBeLessThanOrEqual(900);
    // Refused before the check: a guess that happens to be right tells the guesser nothing.
    expectThrottled(await statusFrom(relay, '127.0.0.11', TEST_ACCOUNT));
    // The real user, elsewhere, is not locked out.
    const elsewhere = await statusFrom(relay, '127.0.0.12', TEST_ACCOUNT);
    expect(elsewhere.status).not.toBe(429);
    expect(elsewhere.status).not.toBe(401);
  }, 30_000);

  it('stops one source guessing across usernames after 30 failures', async () => {
    for (let i = 0; i < 30; i++) {
      const answer = await statusFrom(relay, '127.0.0.13', wrong(`key-guess-${i}`));
      expect(answer.status, `attempt ${i + 1}`).toBe(401);
    }
    expectThrottled(await statusFrom(relay, '127.0.0.13', wrong('key-guess-30')));
    expectThrottled(await statusFrom(relay, '127.0.0.13', TEST_ACCOUNT));
    expect((await statusFrom(relay, '127.0.0.14', TEST_ACCOUNT)).status).not.toBe(429);
  }, 60_000);

  it('answers a wrong password for a known username as slowly as for an unknown one', async () => {
    const known: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < 5; i++) {
      const a = await statusFrom(relay, `127.0.1.${i + 1}`, wrong(TEST_ACCOUNT.username));
      const b = await statusFrom(relay, `127.0.1.${i + 1}`, wrong(`key-nobody-${i}`));
      expect([a.status, b.status]).toEqual([401, 401]);
      known.push(a.ms);
      unknown.push(b.ms);
    }
    // Both pay one full PBKDF2 (600,000 rounds); before, a known one cost one HMAC.
    expect(median(known), `known ${known.join()} unknown ${unknown.join()}`).toBeGreaterThan(
      median(unknown) * 0.5,
    );
    expect(median(unknown)).toBeGreaterThan(median(known) * 0.5);
  }, 60_000);

  it('counts failed sign-ins in the metrics', async () => {
    const before = await metric(
      relay,
      'tps_sign_in_failures_total{listener="http",outcome="wrong_credential"}',
    );
    const throttled = await metric(
      relay,
      'tps_sign_in_failures_total{listener="http",outcome="throttled"}',
    );
    expect(before).toBeGreaterThanOrEqual(10 + 30 + 10);
    expect(throttled).toBeGreaterThanOrEqual(4);
    await statusFrom(relay, '127.0.0.15', wrong(TEST_ACCOUNT.username));
    expect(
      await metric(relay, 'tps_sign_in_failures_total{listener="http",outcome="wrong_credential"}'),
    ).toBe(before + 1);
  });
});

describe('sign-in limits set lower', () => {
  let relay: TestRelay | undefined;
  afterEach(async () => {
    await relay?.close();
    relay = undefined;
  });

  it('a username guessed from many sources stops new sources at its ceiling, not one it signed in from', async () => {
    relay = await startTestRelay({ signInFailuresPerUser: 6 });
    // The real user's usual place.
    expect((await statusFrom(relay, '127.0.2.1', TEST_ACCOUNT)).status).not.toBe(401);
    for (let i = 0; i < 6; i++) {
      const answer = await statusFrom(relay, `127.0.3.${i + 1}`, wrong(TEST_ACCOUNT.username));
      expect(answer.status, `attempt ${i + 1}`).toBe(401);
    }
    expectThrottled(await statusFrom(relay, '127.0.3.99', TEST_ACCOUNT));
    const usual = await statusFrom(relay, '127.0.2.1', TEST_ACCOUNT);
    expect(usual.status).not.toBe(429);
    expect(usual.status).not.toBe(401);
  }, 30_000);

  it('runs at most TPS_SIGN_IN_HASHES slow hashes at once and answers the rest at once with 503 and Retry-After', async () => {
    relay = await startTestRelay({ signInHashes: 1 });
    const started = performance.now();
    const answers = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        statusFrom(relay!, `127.0.4.${i + 1}`, wrong(`key-unknown-${i}`)),
      ),
    );
    const busy = answers.filter((a) => a.status === 503);
    expect(answers.every((a) => a.status === 401 || a.status === 503)).toBe(true);
    expect(busy.length).toBeGreaterThanOrEqual(1);
    for (const answer of busy) expectThrottled(answer, 'SERVICE_BUSY', 503);
    const slowest401 = Math.max(...answers.filter((a) => a.status === 401).map((a) => a.ms));
    // A busy answer does not wait for the hashes in front of it.
    expect(Math.min(...busy.map((a) => a.ms))).toBeLessThan(slowest401);
    expect(performance.now() - started).toBeLessThan(10_000);
  }, 30_000);
});

describe('agent sign-in at the embedded broker', () => {
  let relay: TestRelay;
  beforeAll(async () => {
    relay = await startTestRelay();
  });
  afterAll(async () => {
    await relay.close();
  });

  function connectFrom(
    source: string,
    username: string,
    password: string,
  ): Promise<{ client: MqttClient; error?: Error & { code?: number } }> {
    const { hostname, port } = new URL(relay.brokerUrl);
    const client = new MqttClient(
      () => net.connect({ host: hostname, port: Number(port), localAddress: source }),
      {
        username,
        password,
        clientId: `agent-${username}`,
        protocolVersion: 4,
        reconnectPeriod: 0,
        connectTimeout: 5000,
      },
    );
    return new Promise((resolve) => {
      client.once('connect', () => resolve({ client }));
      client.once('error', (error) => resolve({ client, error }));
    });
  }

  it('refuses an agent credential guessed from one source after 10 failures, not from elsewhere', async () => {
    const created = await post(relay.baseUrl, 'v1', '/terminal/create', {}, TEST_ACCOUNT);
    expect(created.status).toBe(200);
    const agent = created.body.agent as { username: string; password: string };
    for (let i = 0; i < 10; i++) {
      const { client, error } = await connectFrom('127.0.5.1', agent.username, `guess-${i}`);
      expect(error?.code, `attempt ${i + 1}`).toBe(4);
      await client.endAsync(true);
    }
    const throttled = await connectFrom('127.0.5.1', agent.username, agent.password);
    expect(throttled.error?.code).toBe(3);
    await throttled.client.endAsync(true);

    const elsewhere = await connectFrom('127.0.5.2', agent.username, agent.password);
    expect(elsewhere.error).toBeUndefined();
    await elsewhere.client.subscribeAsync(terminalTopics(agent.username).command, { qos: 1 });
    await elsewhere.client.endAsync();
    expect(
      await metric(relay, 'tps_sign_in_failures_total{listener="mqtt",outcome="wrong_credential"}'),
    ).toBe(10);
    expect(
      await metric(relay, 'tps_sign_in_failures_total{listener="mqtt",outcome="throttled"}'),
    ).toBe(1);
  }, 30_000);
});
