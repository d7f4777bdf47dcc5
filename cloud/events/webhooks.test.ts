import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualTimers } from '../../common/testing/manual-timers.js';
import type { Transaction } from '../../protocol/index.js';
import { EmbeddedChangeBus } from '../cluster/embedded.js';
import { SqliteStore } from '../store/sqlite.js';
import { CursorTokens } from './cursor-token.js';
import { EventFeed } from './event-feed.js';
import { EventLog } from './event-list.js';
import { Webhooks } from './webhooks.js';
import { parseNetworks } from './webhook-target.js';

const START = Date.parse('2026-03-01T12:00:00.000Z');
const at = (ms = 0) => new Date(START + ms).toISOString();

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Waits for deliveries and store writes, which run on real I/O, never for time to pass. */
async function until(check: () => boolean | Promise<boolean>, what: string) {
  for (let i = 0; i < 1000; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** A receiver answering each delivery with the next status of `statuses`, then 200. */
async function receiver(statuses: number[]) {
  const received: string[] = [];
  const server = http.createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      received.push(body);
      response.writeHead(statuses.shift() ?? 200).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  return { received, statuses, url: `http://127.0.0.1:${port}/hook` };
}

async function relayParts(url: string, disableAfterMs: number) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-webhooks-'));
  const store = new SqliteStore(path.join(dir, 'relay.sqlite'));
  cleanups.push(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  await store.createAccount({ id: 'acct-1', kind: 'merchant', createdAt: at() });
  await store.createTerminal({
    id: 't-1',
    accountId: 'acct-1',
    kind: 'SIMULATOR',
    capabilities: { printer: true, battery: true },
    status: { terminal_id: 't-1', updated_at: at(), transaction_state: 'READY' },
    createdAt: at(),
  });
  await store.createWebhook({
    id: 'wh-1',
    accountId: 'acct-1',
    url,
    filter: {},
    mode: 'structured',
    secret: 'whsec_test',
    enabled: true,
    cursor: 0,
    createdAt: at(),
  });
  const feed = new EventFeed();
  const log = new EventLog({
    store,
    feed,
    tokens: new CursorTokens(randomBytes(32)),
    vendor: 'test',
    source: () => 'https://relay.test',
  });
  const timers = new ManualTimers(START);
  const webhooks = new Webhooks({
    store,
    bus: new EmbeddedChangeBus(),
    feed,
    log,
    clock: timers.clock,
    timers,
    random: () => 0.5,
    logger: pino({ level: 'silent' }),
    settings: {
      allowHttp: true,
      allowNetworks: parseNetworks('127.0.0.1/32'),
      maxPerCredential: 20,
      maxPerAccount: 1000,
      retryBaseMs: 1_000,
      retryCapMs: 4_000,
      disableAfterMs,
      timeoutMs: 5_000,
    },
  });
  cleanups.push(() => webhooks.stop());

  /** Commits a transaction and its event, as the service does, and tells the feed. */
  const commit = async (externalId: string) => {
    const txn: Transaction = {
      id: `tx-${externalId}`,
      terminal_id: 't-1',
      external_id: externalId,
      type: 'PURCHASE',
      state: 'PROCESSING',
      created_at: at(),
      updated_at: at(),
      requested_amount: 100,
      currency: 'EUR',
    };
    const event = {
      id: `ev-${externalId}`,
      accountId: 'acct-1',
      subject: 't-1',
      kind: 'Transaction' as const,
      time: at(),
      data: txn,
    };
    await store.changeTransaction({ terminalId: 't-1', externalId }, () => ({
      write: { txn, accountId: 'acct-1', version: 1 },
      events: [event],
      result: undefined,
    }));
    feed.publish([event]);
  };
  return { store, timers, webhooks, commit };
}

/** Lets each back-off the deliverer arms run out at once; answers the waits asked for. */
async function waitsOut(timers: ManualTimers, count: number): Promise<number[]> {
  const waits: number[] = [];
  for (let i = 0; i < count; i++) {
    await until(() => timers.size === 1, `back-off ${i + 1}`);
    const before = timers.now;
    timers.fireNext();
    waits.push(timers.now - before);
  }
  return waits;
}

describe('webhook retries', () => {
  it('back off exponentially with jitter, capped, and start over after a delivery', async () => {
    const { received, statuses, url } = await receiver([500, 500, 503, 500]);
    const { store, timers, webhooks, commit } = await relayParts(url, 60_000);
    await commit('e-1');
    await webhooks.start();
    // random 0.5: three quarters of 1, 2, 4, 4 (capped) seconds.
    expect(await waitsOut(timers, 4)).toEqual([750, 1_500, 3_000, 3_000]);
    await until(() => received.length === 5, 'the fifth delivery');
    await until(async () => (await store.getWebhook('wh-1'))?.cursor !== 0, 'the saved cursor');
    const hook = await store.getWebhook('wh-1');
    expect(hook?.enabled).toBe(true);
    expect(hook?.failingSince).toBeUndefined();

    // A failure after the delivery waits the shortest time again.
    statuses.push(500);
    await commit('e-2');
    expect(await waitsOut(timers, 1)).toEqual([750]);
    await until(() => received.length === 7, 'the next event');
    expect(received.slice(5).map((body) => JSON.parse(body).id)).toEqual(['ev-e-2', 'ev-e-2']);
  });

  it('disable a receiver failing for longer than disableAfterMs, on the relay clock', async () => {
    const { received, url } = await receiver([500, 500, 500, 500, 500, 500]);
    const { store, timers, webhooks, commit } = await relayParts(url, 5_000);
    await commit('e-1');
    await webhooks.start();
    // Failing since START: 750 + 1500 + 3000 ms later, the fourth failure disables it.
    expect(await waitsOut(timers, 3)).toEqual([750, 1_500, 3_000]);
    await until(async () => !(await store.getWebhook('wh-1'))?.enabled, 'the receiver disabled');
    expect(received).toHaveLength(4);
    expect(timers.size).toBe(0);
    expect(await store.getWebhook('wh-1')).toMatchObject({
      failingSince: at(),
      lastError: 'HTTP 5xx',
      disabledReason: `disabled after failing since ${at()}; last error: HTTP 5xx`,
    });
  });
});
