/**
 * The pairing surface's bodies, bent: `/pairing/start` and `/pairing/wait` (no credential:
 * anyone can send them) and `/terminal/claim` with codes of real waiting pairings. Never
 * a 5xx, never a stall, every refusal the spec's error object, nothing logged as an
 * error, and no log line at any level carrying a pairing secret or a password handed out.
 * `npm run fuzz` runs the same with many more runs.
 */
import { createHash, randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import fc from 'fast-check';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loggerOptions } from '../cloud/logging.js';
import { REVISIONS, expectErrorObject, type Rev } from './support/api.js';
import { bentBody, fuzzParameters, nestedArrays, nestedObjects } from './support/fuzz.js';
import { basicAuth, startTestRelay, type TestRelay } from './support/relay.js';

/** An answer later than this is a stall: every body here waits at most a second. */
const STALL_MS = 10_000;

let relay: TestRelay;
/** Every line the relay logged, at any level. */
const lines: string[] = [];
/** Pairing secrets sent and passwords handed out: none may reach a log line. */
const secrets = new Set<string>();

beforeAll(async () => {
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      callback();
    },
  });
  relay = await startTestRelay(
    // Limits high enough that the bodies reach the store rather than a 429.
    {
      pairingPerSource: 100_000,
      pairingClaimFailuresPerCredential: 100_000,
      pairingClaimFailuresPerAccount: 100_000,
    },
    undefined,
    { logger: pino(loggerOptions('debug'), stream) },
  );
});
afterAll(async () => {
  await relay?.close();
});

interface Answer {
  status: number;
  body: unknown;
  text: string;
}

/** Sends JSON text (no credential unless given); fails on a stall. */
async function send(
  revision: Rev,
  operation: string,
  text: string,
  credential?: { username: string; password: string },
): Promise<Answer> {
  const response = await fetch(`${relay.baseUrl}/${revision}${operation}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(credential ? { authorization: basicAuth(credential) } : {}),
    },
    body: text,
    signal: AbortSignal.timeout(STALL_MS),
  });
  const answer = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(answer);
  } catch {
    body = undefined;
  }
  return { status: response.status, body, text: answer };
}

/** A 2xx or a 4xx with the error object, never a 5xx; a PAIRED answer's password is kept. */
function expectNoFault(answer: Answer, sent: string): void {
  const context = `HTTP ${answer.status} ${answer.text.slice(0, 300)} for ${sent.slice(0, 300)}`;
  expect(answer.status, context).toBeLessThan(500);
  if (answer.status >= 400) expectErrorObject(answer);
  else expect(typeof answer.body, context).toBe('object');
  const password = (answer.body as { broker?: { password?: unknown } } | undefined)?.broker
    ?.password;
  if (typeof password === 'string') secrets.add(password);
  const posPassword = (answer.body as { password?: unknown } | undefined)?.password;
  if (typeof posPassword === 'string') secrets.add(posPassword);
}

function agentSecret() {
  const secret = randomBytes(32).toString('base64url');
  secrets.add(secret);
  return { secret, sha256: createHash('sha256').update(secret).digest('hex') };
}

/** A pairing started now: its secret and its code. */
async function started(): Promise<{ secret: string; code: string }> {
  const agent = agentSecret();
  const answer = await send(
    'v1',
    '/pairing/start',
    JSON.stringify({ secret_sha256: agent.sha256 }),
  );
  expect(answer.status).toBe(200);
  return { secret: agent.secret, code: (answer.body as { code: string }).code };
}

/** A bent body waits at most a second: a wait left out (default 25 s) or longer becomes 1. */
function briefly(body: unknown): unknown {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  const record = body as Record<string, unknown>;
  const wait = record.wait_seconds;
  return wait === undefined || (typeof wait === 'number' && wait > 1)
    ? { ...record, wait_seconds: 1 }
    : record;
}

describe('pairing bodies, bent', () => {
  it('/pairing/start never answers a 5xx or stalls, and refuses with the error object', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...REVISIONS),
        fc.boolean(),
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        async (revision, fresh, seed) => {
          // A fresh secret's hash, or one named before (refused: draw a new secret).
          const sha256 = fresh ? agentSecret().sha256 : 'a'.repeat(64);
          const body = fc.sample(bentBody({ secret_sha256: sha256 }), { seed, numRuns: 1 })[0];
          const text = JSON.stringify(body) ?? 'null';
          expectNoFault(await send(revision, '/pairing/start', text), text);
        },
      ),
      fuzzParameters(40),
    );
  });

  it('/pairing/wait never answers a 5xx or stalls, and refuses with the error object', async () => {
    const pairing = await started();
    const claimed = await started();
    const claim = await send(
      'v1',
      '/terminal/claim',
      JSON.stringify({ code: claimed.code }),
      relay.account,
    );
    expect(claim.status).toBe(200);
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...REVISIONS),
        fc.constantFrom(pairing.secret, claimed.secret),
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        async (revision, secret, seed) => {
          const body = fc.sample(bentBody({ secret, wait_seconds: 0 }), { seed, numRuns: 1 })[0];
          const text = JSON.stringify(briefly(body)) ?? 'null';
          expectNoFault(await send(revision, '/pairing/wait', text), text);
        },
      ),
      fuzzParameters(60),
    );
  });

  it('/terminal/claim of real codes never answers a 5xx or stalls', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...REVISIONS),
        fc.integer({ min: 0, max: 2 ** 31 - 1 }),
        async (revision, seed) => {
          const { code } = await started();
          const valid = { code, name: 'till 1', cohort: 'cohort-front', printer: true };
          const body = fc.sample(bentBody(valid), { seed, numRuns: 1 })[0];
          const text = JSON.stringify(body) ?? 'null';
          expectNoFault(await send(revision, '/terminal/claim', text, relay.account), text);
        },
      ),
      fuzzParameters(25),
    );
  });

  it('JSON text that is deep, broken or not JSON is refused with the error object', async () => {
    const deep = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
    const texts = [
      '',
      'null',
      '"secret"',
      '{',
      '{"secret": "x"',
      `{"secret":${deep(100_000)}}`,
      `{"secret_sha256":${deep(10_000)}}`,
      JSON.stringify({ secret: nestedObjects(2_000), wait_seconds: 0 }),
      JSON.stringify({ secret_sha256: nestedArrays(2_000) }),
      '{"__proto__":{"polluted":true},"wait_seconds":0}',
    ];
    for (const operation of ['/pairing/start', '/pairing/wait']) {
      for (const text of texts) expectNoFault(await send('v1', operation, text), text);
    }
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('the log', () => {
  it('has no error, and no line carries a pairing secret or a password handed out', () => {
    expect(secrets.size).toBeGreaterThan(0);
    expect(lines.some((line) => line.includes('paired agent collected'))).toBe(true);
    const errors = lines.filter((line) => (JSON.parse(line) as { level: number }).level >= 50);
    expect(errors).toEqual([]);
    const carried = [...secrets];
    expect(lines.filter((line) => carried.some((secret) => line.includes(secret)))).toEqual([]);
  });
});
