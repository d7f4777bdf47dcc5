/**
 * Pairing waits under a flood, over real HTTP: the agent's wait needs no credential, so
 * the relay bounds what one client can hold with it. A pairing parks one wait (a newer
 * one ends the older, which answers WAITING), an address parks at most
 * TPS_PAIRING_WAITS_PER_SOURCE, and a parked wait costs no store reads: the claim wakes
 * it. Meanwhile a POS pays on a simulated terminal. With two relays on one PostgreSQL
 * (DATABASE_URL), a claim on one wakes the wait parked on the other through the change bus.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from './support/e2e-parts.js';
import { post, posFor, startTestRelay, type ApiResponse, type TestRelay } from './support/relay.js';
import { twoRelaysOnOneDatabase } from './support/scratch-database.js';

const WAITS_PER_SOURCE = 3;

function agentSecret() {
  const secret = randomBytes(32).toString('base64url');
  return { secret, sha256: createHash('sha256').update(secret).digest('hex') };
}

describe('pairing waits under a flood', () => {
  let relay: TestRelay;
  /** Store reads of pairings by secret, as the waits make them. */
  let reads = 0;
  const gone = new AbortController();

  const agentCall = async (operation: string, body: unknown, from: string) => {
    const response = await fetch(`${relay.baseUrl}/v1${operation}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': from },
      body: JSON.stringify(body),
      signal: gone.signal,
    });
    const answer: ApiResponse = {
      status: response.status,
      headers: response.headers,
      body: await response.json(),
    };
    return answer;
  };

  beforeAll(async () => {
    relay = await startTestRelay({
      trustProxy: 'loopback',
      pairingWaitsPerSource: WAITS_PER_SOURCE,
    });
    const findPairing = relay.store.findPairing.bind(relay.store);
    relay.store.findPairing = (secretHash) => {
      reads++;
      return findPairing(secretHash);
    };
  });
  afterAll(async () => {
    gone.abort();
    await relay.close();
    fs.rmSync(relay.dataDir, { recursive: true, force: true });
  });

  it('1,000 waits with one secret park one; store reads stay flat; a POS still pays; the claim wakes it', async () => {
    const from = '203.0.113.1';
    const agent = agentSecret();
    const started = await agentCall('/pairing/start', { secret_sha256: agent.sha256 }, from);
    expect(started.status).toBe(200);

    const answered: ApiResponse[] = [];
    const flood = Array.from({ length: 1000 }, () =>
      agentCall('/pairing/wait', { secret: agent.secret, wait_seconds: 120 }, from).then(
        (answer) => void answered.push(answer),
      ),
    );
    // Each newer wait ends the one before it: all but one answer long before 120 s.
    await eventually(
      () => answered.length,
      (n) => n >= 999,
      { ms: 60_000, what: 'all waits but one answered' },
    );
    expect(answered.length).toBe(999);
    for (const answer of answered) {
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({ state: 'WAITING', expires_at: started.body.expires_at });
    }
    // The flood read the store once a request, as it came in; the wait left parked does not.
    expect(reads).toBeGreaterThanOrEqual(1000);
    const readsBefore = reads;
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(reads - readsBefore).toBeLessThanOrEqual(2);

    const pos = posFor(relay, await relay.newSimulator());
    const paid = await pos.call('/transaction/purchase', {
      external_id: 'during-the-flood',
      requested_amount: 990,
      currency: 'EUR',
      options: { wait_seconds: 30 },
    });
    expect(paid.status).toBe(200);
    expect(paid.body.transaction.state).toBe('AWAITING_CONFIRM');

    const claimed = await post(
      relay.baseUrl,
      'v1',
      '/terminal/claim',
      { code: started.body.code, name: 'Flooded till' },
      relay.account,
    );
    expect(claimed.status).toBe(200);
    await Promise.all(flood);
    const last = answered.at(-1)!;
    expect(last.status).toBe(200);
    expect(last.body).toMatchObject({ state: 'PAIRED', terminal_id: claimed.body.terminal_id });
  }, 120_000);

  it('an address parks at most TPS_PAIRING_WAITS_PER_SOURCE waits; beyond, 429 with Retry-After', async () => {
    const from = '203.0.113.2';
    const agents = Array.from({ length: WAITS_PER_SOURCE + 2 }, agentSecret);
    for (const agent of agents) {
      const started = await agentCall('/pairing/start', { secret_sha256: agent.sha256 }, from);
      expect(started.status).toBe(200);
    }
    const answered: ApiResponse[] = [];
    const waits = agents.map((agent) =>
      agentCall('/pairing/wait', { secret: agent.secret, wait_seconds: 120 }, from).then(
        (answer) => void answered.push(answer),
        () => undefined,
      ),
    );
    await eventually(
      () => answered.length,
      (n) => n >= 2,
      { ms: 20_000, what: 'the waits beyond the cap refused' },
    );
    // Time for any other answer to arrive, were one due: none is.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(answered).toHaveLength(2);
    for (const refused of answered) {
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe('TOO_MANY_REQUESTS');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    // Another address is not held back by this one's waits.
    const other = agentSecret();
    await agentCall('/pairing/start', { secret_sha256: other.sha256 }, '203.0.113.3');
    const elsewhere = await agentCall(
      '/pairing/wait',
      { secret: other.secret, wait_seconds: 0 },
      '203.0.113.3',
    );
    expect(elsewhere.body.state).toBe('WAITING');
    gone.abort();
    await Promise.all(waits);
  }, 60_000);
});

const DATABASE_URL = process.env.DATABASE_URL;

describe.skipIf(!DATABASE_URL)(
  'pairing waits on two relays on one PostgreSQL (DATABASE_URL)',
  () => {
    const relays = twoRelaysOnOneDatabase(DATABASE_URL!, 'tps_pairing');

    it('a claim on one relay wakes the wait parked on the other, which read nothing meanwhile', async () => {
      const { a, b } = relays;
      const agent = agentSecret();
      const call = (relay: TestRelay, operation: string, body: unknown) =>
        fetch(`${relay.baseUrl}/v1${operation}`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }).then(async (response): Promise<ApiResponse> => ({
          status: response.status,
          headers: response.headers,
          body: await response.json(),
        }));
      const started = await call(a, '/pairing/start', { secret_sha256: agent.sha256 });
      expect(started.status).toBe(200);
      let readsOnB = 0;
      const findPairing = b.store.findPairing.bind(b.store);
      b.store.findPairing = (secretHash) => {
        readsOnB++;
        return findPairing(secretHash);
      };
      // Far longer than the test waits for it: only the change bus can answer it in time.
      const waited = call(b, '/pairing/wait', { secret: agent.secret, wait_seconds: 120 });
      await eventually(
        () => readsOnB,
        (n) => n >= 2,
        { what: 'the wait parked on relay B' },
      );
      await new Promise((resolve) => setTimeout(resolve, 2500));
      expect(readsOnB).toBe(2);
      const claimed = await post(
        a.baseUrl,
        'v1',
        '/terminal/claim',
        { code: started.body.code },
        a.account,
      );
      expect(claimed.status).toBe(200);
      const paired = await Promise.race([
        waited,
        new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 30_000)),
      ]);
      expect(paired?.status).toBe(200);
      expect(paired?.body).toMatchObject({
        state: 'PAIRED',
        terminal_id: claimed.body.terminal_id,
      });
    }, 60_000);
  },
);
