/**
 * Webhook targets, over the real API: a tenant cannot make the relay post to the relay's
 * own host, its networks or a cloud metadata address, nor read in `last_error` what
 * answered there; a credential holds a bounded number of webhooks.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { posFor, startTestRelay, type TestRelay } from './support/relay.js';

let relay: TestRelay;
beforeAll(async () => {
  relay = await startTestRelay({
    webhookAllowHttp: true,
    // Receivers the operator allows listen on 127.0.0.2; 127.0.0.1 stays refused.
    webhookAllowNetworks: '127.0.0.2/32',
    webhooksPerCredential: 2,
    webhookRetryBaseMs: 20,
    webhookRetryCapMs: 50,
  });
});
afterAll(async () => {
  await relay.close();
});

/** A receiver that answers `status` with a body naming what it is. */
async function receiver(host: string, status = 200) {
  let requests = 0;
  const server = http.createServer((_request, response) => {
    requests++;
    response.writeHead(status, { 'content-type': 'text/plain' });
    response.end('internal-db-7 says: password authentication failed for user "admin"');
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    requests: () => requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function until(check: () => Promise<boolean>, what: string) {
  for (let i = 0; i < 400; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Makes an event for the terminal, then waits for the webhook's first failure. */
async function lastErrorAfterAnEvent(pos: ReturnType<typeof posFor>, id: string) {
  await pos.call('/transaction/confirm', { external_id: `e-${id}`, result_code: 'ABORTED' });
  let lastError: string | undefined;
  await until(async () => {
    const listed = await pos.call('/webhook/list', {});
    lastError = listed.body.webhooks.find((w: { id: string }) => w.id === id)?.last_error;
    return lastError !== undefined;
  }, 'a failed delivery');
  return lastError;
}

describe('webhook targets', () => {
  it('refuses at creation a URL whose host is an internal address, however spelled', async () => {
    const pos = posFor(relay, await relay.newSimulator());
    for (const url of [
      'http://127.0.0.1:8080/hook',
      'http://2130706433/hook',
      'http://[::1]/hook',
      'http://[::ffff:127.0.0.1]/hook',
      'http://169.254.169.254/latest/meta-data/',
      'http://10.0.0.5/hook',
      'http://100.100.100.200/latest/meta-data/',
      'https://[fd00:ec2::254]/latest/meta-data/',
    ]) {
      const answer = await pos.call('/webhook/create', { url });
      expect({ url, status: answer.status, body: answer.body }).toEqual({
        url,
        status: 400,
        body: {
          error: { code: 'INVALID_REQUEST', description: 'url: must name a public address' },
        },
      });
    }
    expect((await pos.call('/webhook/list', {})).body.webhooks).toEqual([]);
  });

  it('never delivers to a name that resolves to loopback, and says only that it refused', async () => {
    const target = await receiver('127.0.0.1');
    const pos = posFor(relay, await relay.newSimulator());
    const created = await pos.call('/webhook/create', {
      url: `http://localhost:${target.port}/hook`,
    });
    expect(created.status).toBe(200);
    expect(await lastErrorAfterAnEvent(pos, created.body.webhook.id)).toBe('refused address');
    expect(target.requests()).toBe(0);
    await target.close();
  });

  it("tells an allowed receiver's failures by category, never by what answered", async () => {
    const failing = await receiver('127.0.0.2', 500);
    const closed = await receiver('127.0.0.2');
    await closed.close();
    const pos = posFor(relay, await relay.newSimulator());
    const errors = [];
    for (const port of [failing.port, closed.port]) {
      const created = await pos.call('/webhook/create', { url: `http://127.0.0.2:${port}/hook` });
      expect(created.status).toBe(200);
      errors.push(await lastErrorAfterAnEvent(pos, created.body.webhook.id));
    }
    expect(errors).toEqual(['HTTP 5xx', 'connection failed']);
    expect(failing.requests()).toBeGreaterThan(0);
    await failing.close();
  });

  it('caps the webhooks of one credential, and counts each credential apart', async () => {
    const pos = posFor(relay, await relay.newSimulator());
    // A name that never resolves: nothing is sent anywhere.
    const url = 'https://receiver.invalid/hook';
    const first = await pos.call('/webhook/create', { url });
    expect((await pos.call('/webhook/create', { url })).status).toBe(200);
    const third = await pos.call('/webhook/create', { url });
    expect(third.status).toBe(400);
    expect(third.body.error.code).toBe('TOO_MANY_WEBHOOKS');

    const other = posFor(relay, await relay.newSimulator());
    expect((await other.call('/webhook/create', { url })).status).toBe(200);

    await pos.call('/webhook/delete', { id: first.body.webhook.id });
    expect((await pos.call('/webhook/create', { url })).status).toBe(200);
  });
});

describe('webhooks of one account', () => {
  let bounded: TestRelay;
  beforeAll(async () => {
    bounded = await startTestRelay({ webhooksPerCredential: 2, webhooksPerAccount: 3 });
  });
  afterAll(async () => {
    await bounded.close();
  });

  it("are capped across its credentials, its terminals' included", async () => {
    const url = 'https://receiver.invalid/hook';
    const first = posFor(bounded, await bounded.newSimulator());
    const second = posFor(bounded, await bounded.newSimulator());
    expect((await first.call('/webhook/create', { url })).status).toBe(200);
    expect((await first.call('/webhook/create', { url })).status).toBe(200);
    expect((await second.call('/webhook/create', { url })).status).toBe(200);
    // The second terminal holds one of its two, but the account holds three.
    const fourth = await second.call('/webhook/create', { url });
    expect([fourth.status, fourth.body.error.code]).toEqual([400, 'TOO_MANY_WEBHOOKS']);
    expect(fourth.body.error.description).toMatch(/account has 3 webhooks/);
  });
});
