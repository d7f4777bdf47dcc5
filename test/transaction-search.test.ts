/**
 * /transaction/search (an extension): the transactions a credential reaches, newest
 * first, filtered by terminal, external id, state, result and creation time, a page at a
 * time through next_cursor. A terminal credential finds its own terminal's alone. On the
 * embedded store, and on PostgreSQL (with an external broker) when DATABASE_URL and
 * MQTT_URL are set.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimulatorCreateResponse } from '../protocol/index.js';
import { TEST_ACCOUNT, post, startTestRelay, type TestRelay } from './support/relay.js';

const ids = (body: { transactions: Array<{ external_id: string }> }) =>
  body.transactions.map((t) => t.external_id);

interface Backend {
  name: string;
  open(): Promise<Record<string, string>>;
  close(): Promise<void>;
}

const DATABASE_URL = process.env.DATABASE_URL;
const MQTT_URL = process.env.MQTT_URL;
const backends: Backend[] = [{ name: 'SQLite', open: async () => ({}), close: async () => {} }];
if (DATABASE_URL && MQTT_URL) {
  const database = `tps_search_${process.pid}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  backends.push({
    name: 'PostgreSQL',
    async open() {
      await admin.connect();
      await admin.query(`CREATE DATABASE ${database}`);
      const url = new URL(DATABASE_URL);
      url.pathname = `/${database}`;
      return { databaseUrl: url.toString(), mqttUrl: MQTT_URL };
    },
    async close() {
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
      await admin.end();
    },
  });
} else {
  console.warn(
    'transaction search on PostgreSQL skipped: DATABASE_URL and MQTT_URL are not both set',
  );
}

describe.each(backends)('/transaction/search on $name', (backend) => {
  let relay: TestRelay;
  let first: SimulatorCreateResponse;
  let second: SimulatorCreateResponse;
  const search = (body: Record<string, unknown>, credential = TEST_ACCOUNT) =>
    post(relay.baseUrl, 'v1', '/transaction/search', body, credential);

  beforeAll(async () => {
    relay = await startTestRelay(await backend.open());
    first = await relay.newSimulator();
    second = await relay.newSimulator();
    // In order: the newest last. 100002 succeeds at once, 100006 is declined by the issuer.
    for (const [sim, externalId, amount] of [
      [first, 'a-1', 100002],
      [second, 'b-1', 100006],
      [first, 'a-2', 100006],
      [second, 'b-2', 100002],
    ] as const) {
      const res = await post(
        relay.baseUrl,
        'v1',
        '/transaction/purchase',
        {
          terminal_id: sim.terminal_id,
          external_id: externalId,
          requested_amount: amount,
          currency: 'EUR',
          wait_seconds: 10,
        },
        sim,
      );
      expect(res.body.transaction.state).toBe('AWAITING_CONFIRM');
    }
  }, 60_000);
  afterAll(async () => {
    await relay?.close();
    await backend.close();
  });

  it("finds every transaction of the account's terminals, newest first", async () => {
    const res = await search({});
    expect(res.status).toBe(200);
    expect(ids(res.body)).toEqual(['b-2', 'a-2', 'b-1', 'a-1']);
    expect(res.body.next_cursor).toBeUndefined();
  });

  it('pages through next_cursor, each transaction once', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const res = await search({ limit: 3, ...(cursor ? { cursor } : {}) });
      seen.push(...ids(res.body));
      cursor = res.body.next_cursor;
      if (!cursor) break;
    }
    expect(seen).toEqual(['b-2', 'a-2', 'b-1', 'a-1']);
  });

  it('filters by terminal, external id, state, result and time', async () => {
    expect(ids((await search({ terminal_id: first.terminal_id })).body)).toEqual(['a-2', 'a-1']);
    expect(ids((await search({ external_id: 'b-1' })).body)).toEqual(['b-1']);
    expect(ids((await search({ result_code: 'DECLINED_BY_ISSUER' })).body)).toEqual(['a-2', 'b-1']);
    expect(ids((await search({ state: 'CONFIRMED' })).body)).toEqual([]);
    expect(ids((await search({ state: 'AWAITING_CONFIRM', result_code: 'SUCCESS' })).body)).toEqual(
      ['b-2', 'a-1'],
    );
    const future = new Date(Date.now() + 3600_000).toISOString();
    expect(ids((await search({ created_from: future })).body)).toEqual([]);
    expect(ids((await search({ created_to: future })).body)).toHaveLength(4);
  });

  it("shows a terminal credential its own terminal's transactions alone", async () => {
    expect(ids((await search({}, first)).body)).toEqual(['a-2', 'a-1']);
    expect(ids((await search({ terminal_id: second.terminal_id }, first)).body)).toEqual([]);
  });

  it('refuses bad filters with 400', async () => {
    for (const body of [
      { limit: 0 },
      { limit: 101 },
      { state: 'DONE' },
      { created_from: 'yesterday' },
      { cursor: 'not-a-cursor' },
    ]) {
      const res = await search(body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.code).toBe('INVALID_REQUEST');
    }
  });
});
