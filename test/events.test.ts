/**
 * Events end to end: the log written with each change, `/event/list` with tokens and long
 * polls, and webhooks delivered to a real HTTP receiver.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebhookVerifier, signWebhookPayload } from '../client/webhook-signature.js';
import { cloudEventSchema } from '../protocol/index.js';
import { posFor, post, startTestRelay, type TestRelay } from './support/relay.js';

const TX = 'eu.vendor.api.pos.v0.Transaction';
const STATUS = 'eu.vendor.api.pos.v0.TerminalStatus';
const INSTANT = 100002;

let clockOffsetMs = 0;
let relay: TestRelay;
beforeAll(async () => {
  relay = await startTestRelay(
    {
      simulatorDelayMs: 30,
      webhookAllowHttp: true,
      // The test's receivers listen on loopback.
      webhookAllowNetworks: '127.0.0.1/32',
      webhookRetryBaseMs: 20,
      webhookRetryCapMs: 100,
      webhookDisableAfterS: 2,
    },
    undefined,
    { clock: { now: () => new Date(Date.now() + clockOffsetMs) } },
  );
});
afterAll(async () => {
  await relay.close();
});

type Pos = ReturnType<typeof posFor>;
const list = (pos: Pos, body: object, revision: 'v0' | 'v1' = 'v1') =>
  post(relay.baseUrl, revision, '/event/list', body, pos.credential);

async function until(check: () => boolean | Promise<boolean>, ms = 8000) {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Reads with next_token, short polls, until a page comes back empty. */
async function readAll(pos: Pos, first: object, revision: 'v0' | 'v1' = 'v1') {
  const events: Array<{ id: string; type: string; data: Record<string, unknown> }> = [];
  let answer = await list(pos, first, revision);
  for (;;) {
    expect(answer.status).toBe(200);
    events.push(...answer.body.events);
    if (answer.body.events.length === 0) return { events, answer };
    answer = await list(pos, { next_token: answer.body.next_token }, revision);
  }
}

/**
 * The terminal is idle again and shows the outcome: the agent reports a new state at once
 * but a screen text within 20 ms, so the text may follow the state.
 */
async function settled(pos: Pos) {
  await until(async () => {
    const { status } = (await pos.call('/terminal/status', {})).body;
    return status.transaction_state === 'READY' && /approved/i.test(status.screen_message ?? '');
  });
}

describe('the event log', () => {
  it('a purchase with pause, its confirm and a refund produce the events a reader expects', async () => {
    const pos = posFor(relay, await relay.newSimulator());
    // A filter without a token starts at the oldest event kept: the new terminal's status.
    const start = await readAll(pos, { filter: { subject: { eq: pos.terminalId } } });
    expect(start.events.filter((e) => e.type === TX)).toEqual([]);
    const from = { next_token: start.answer.body.next_token };

    await pos.call('/transaction/purchase', {
      external_id: 'buy',
      requested_amount: 1000,
      currency: 'EUR',
      options: { on_customer_identified: { pause: true } },
    });
    await pos.call('/transaction/continue', { external_id: 'buy' });
    await pos.call('/transaction/confirm', { external_id: 'buy', result_code: 'SUCCESS' });
    await pos.call('/transaction/refund', {
      external_id: 'back',
      requested_amount: 400,
      currency: 'EUR',
      original_purchase_external_id: 'buy',
    });
    await pos.call('/transaction/confirm', { external_id: 'back', result_code: 'SUCCESS' });
    await settled(pos);

    for (const revision of ['v1', 'v0'] as const) {
      const { events } = await readAll(pos, from, revision);
      const transactions = events
        .filter((e) => e.type === TX)
        .map((e) => `${e.data.external_id}:${e.data.state}`);
      expect(transactions).toEqual([
        'buy:PROCESSING',
        'buy:AWAITING_CONTINUE',
        'buy:PROCESSING',
        'buy:AWAITING_CONFIRM',
        'buy:CONFIRMED',
        'back:PROCESSING',
        'back:AWAITING_CONFIRM',
        'back:CONFIRMED',
      ]);
      const states = events.filter((e) => e.type === STATUS).map((e) => e.data.transaction_state);
      expect(states).toContain('AWAITING_CONTINUE');
      expect(states.at(-1)).toBe('READY');
      const schema = cloudEventSchema(revision);
      for (const event of events) {
        expect(schema.safeParse(event).error).toBeUndefined();
        expect(event).toMatchObject({ specversion: '1.0', subject: pos.terminalId });
        expect((event as unknown as { source: string }).source).toBe(relay.baseUrl);
      }
      const stamp = (events[0]!.data as { updated_at: string }).updated_at;
      expect(stamp).toHaveLength(revision === 'v1' ? 24 : 20);
    }
  });

  it('filters by type, and an unfiltered read starts at the present', async () => {
    const pos = posFor(relay, await relay.newSimulator());
    await pos.call('/transaction/purchase', {
      external_id: 'f',
      requested_amount: INSTANT,
      currency: 'EUR',
    });
    await settled(pos);
    const typed = await readAll(pos, {
      filter: { subject: { eq: pos.terminalId }, type: { eq: STATUS } },
    });
    expect(typed.events.length).toBeGreaterThan(0);
    expect(new Set(typed.events.map((e) => e.type))).toEqual(new Set([STATUS]));
    const unknownType = await list(pos, { filter: { type: { eq: 'eu.vendor.api.pos.v0.Other' } } });
    expect(unknownType.body.events).toEqual([]);
    const present = await list(pos, {});
    expect(present.body.events).toEqual([]);
    await pos.call('/transaction/confirm', { external_id: 'f', result_code: 'SUCCESS' });
    const next = await list(pos, { next_token: present.body.next_token });
    expect(next.body.events.map((e: { data: { state: string } }) => e.data.state)).toEqual([
      'CONFIRMED',
    ]);
  });

  it('a long poll wakes for a matching event and not for others', async () => {
    const watched = posFor(relay, await relay.newSimulator());
    const other = posFor(relay, await relay.newSimulator());
    const start = await list(watched, {
      filter: { subject: { eq: watched.terminalId }, type: { eq: TX } },
    });
    let woke = false;
    const parked = list(watched, { next_token: start.body.next_token, wait_seconds: 20 }).then(
      (r) => {
        woke = true;
        return r;
      },
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    await other.call('/transaction/purchase', {
      external_id: 'o',
      requested_amount: INSTANT,
      currency: 'EUR',
    });
    await watched.call('/terminal/status', {});
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(woke).toBe(false);
    const sent = Date.now();
    await watched.call('/transaction/confirm', {
      external_id: 'never-seen',
      result_code: 'ABORTED',
    });
    const answer = await parked;
    expect(Date.now() - sent).toBeLessThan(1000);
    expect(
      answer.body.events.map((e: { data: { external_id: string } }) => e.data.external_id),
    ).toEqual(['never-seen']);
  });

  it('a credential sees only its own terminals; a token cannot be forged or moved', async () => {
    const mine = posFor(relay, await relay.newSimulator());
    const theirs = posFor(relay, await relay.newSimulator());
    const peek = await list(mine, { filter: { subject: { eq: theirs.terminalId } } });
    expect(peek.status).toBe(400);
    expect(peek.body.error.code).toBe('TERMINAL_NOT_FOUND');
    const cohort = await list(mine, { filter: { subject: { eq: relay.bootstrap.cohortId } } });
    expect(cohort.body.error.code).toBe('TERMINAL_NOT_FOUND');

    const start = await list(mine, {});
    await theirs.call('/transaction/purchase', {
      external_id: 't',
      requested_amount: INSTANT,
      currency: 'EUR',
    });
    await mine.call('/transaction/purchase', {
      external_id: 'm',
      requested_amount: INSTANT,
      currency: 'EUR',
    });
    await settled(mine);
    const seen = await readAll(mine, { next_token: start.body.next_token });
    expect(new Set(seen.events.map((e) => (e as unknown as { subject: string }).subject))).toEqual(
      new Set([mine.terminalId]),
    );

    const token: string = start.body.next_token;
    const [payload, mac] = token.split('.');
    const altered = Buffer.from(payload!, 'base64url')
      .toString()
      .replace(/"p":\d+/, '"p":0');
    const forged = await list(mine, {
      next_token: `${Buffer.from(altered).toString('base64url')}.${mac}`,
    });
    expect(forged.status).toBe(400);
    expect(forged.body.error.code).toBe('INVALID_TOKEN');

    // The account sees every terminal through its cohort.
    const account = { ...mine, credential: relay.account };
    const all = await readAll(account, {
      filter: { subject: { eq: relay.bootstrap.cohortId }, type: { eq: TX } },
    });
    const subjects = new Set(all.events.map((e) => (e as unknown as { subject: string }).subject));
    expect(subjects.has(mine.terminalId) && subjects.has(theirs.terminalId)).toBe(true);
  });

  it('10,000 events read with tokens while written concurrently: none lost, none repeated', async () => {
    const sims = await Promise.all([1, 2, 3, 4].map(() => relay.newSimulator()));
    const reader = { ...posFor(relay, sims[0]!), credential: relay.account };
    const filter = { filter: { subject: { eq: relay.bootstrap.cohortId }, type: { eq: STATUS } } };
    const head = await readAll(reader, filter);
    const written = new Set<string>();
    let token: string = head.answer.body.next_token;
    const writers = sims.map(async (sim, w) => {
      // Writes of one turn share a commit, in the order they were made.
      for (let chunk = 0; chunk < 2500; chunk += 50) {
        const batch = Array.from({ length: 50 }, (_, k) =>
          relay.store.updateTerminalStatus(
            sim.terminal_id,
            { screen_message: `w${w}-${chunk + k}` },
            new Date().toISOString(),
            `evt-bulk-${w}-${chunk + k}`,
          ),
        );
        for (const event of await Promise.all(batch)) written.add(event!.id);
      }
    });
    const read: string[] = [];
    let writing = true;
    const done = Promise.all(writers).then(() => (writing = false));
    const all: string[] = [];
    while (writing || read.length < 10_000) {
      const page = await list(reader, { next_token: token, limit: 1000 });
      expect(page.status).toBe(200);
      const ids: string[] = page.body.events.map((e: { id: string }) => e.id);
      all.push(...ids);
      // The simulated terminals' own status reports interleave; only the bulk is counted.
      read.push(...ids.filter((id) => id.startsWith('evt-bulk-')));
      token = page.body.next_token;
      if (!writing && page.body.events.length === 0) break;
    }
    await done;
    expect(new Set(all).size).toBe(all.length);
    expect(read).toHaveLength(10_000);
    expect(new Set(read).size).toBe(10_000);
    expect(new Set(read)).toEqual(written);
    // Each writer's events arrive in the order it wrote them.
    for (const w of [0, 1, 2, 3]) {
      const mine = read
        .filter((id) => id.startsWith(`evt-bulk-${w}-`))
        .map((id) => Number(id.split('-').at(-1)));
      expect(mine).toEqual([...mine].sort((a, b) => a - b));
    }
  });

  it('a position deleted by retention is a clear error, not a silent gap', async () => {
    const pos = posFor(relay, await relay.newSimulator());
    const start = await list(pos, {});
    await pos.call('/transaction/purchase', {
      external_id: 'r',
      requested_amount: INSTANT,
      currency: 'EUR',
    });
    clockOffsetMs = 30 * 86_400_000;
    try {
      await relay.retention.trim();
    } finally {
      clockOffsetMs = 0;
    }
    const gone = await list(pos, { next_token: start.body.next_token });
    expect(gone.status).toBe(410);
    expect(gone.body.error.code).toBe('EVENTS_EXPIRED');
    const fresh = await list(pos, { filter: { subject: { eq: pos.terminalId } } });
    expect(fresh.status).toBe(200);
  });
});

interface Receiver {
  url: string;
  deliveries: Array<{ headers: http.IncomingHttpHeaders; body: string }>;
  /** Answer for the next request: a status code. */
  respond: () => number;
  close(): Promise<void>;
}

async function startReceiver(): Promise<Receiver> {
  const receiver = {
    deliveries: [] as Receiver['deliveries'],
    respond: () => 200,
  } as Receiver;
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => (body += chunk));
    req.on('end', () => {
      const status = receiver.respond();
      if (status === 200) receiver.deliveries.push({ headers: req.headers, body });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  receiver.close = () => new Promise((resolve) => server.close(() => resolve()));
  return receiver;
}

describe('webhooks', () => {
  it('a receiver that fails for a while gets every event once it recovers, in order, signed', async () => {
    const receiver = await startReceiver();
    const pos = posFor(relay, await relay.newSimulator());
    const created = await pos.call('/webhook/create', {
      url: receiver.url,
      filter: { type: { eq: TX } },
    });
    expect(created.status).toBe(200);
    const { secret, id } = created.body.webhook;
    expect(secret).toMatch(/^whsec_/);

    let failures = 0;
    receiver.respond = () => (failures++ < 6 ? 503 : 200);
    for (const n of [1, 2, 3]) {
      await pos.call('/transaction/purchase', {
        external_id: `w${n}`,
        requested_amount: INSTANT,
        currency: 'EUR',
      });
      await pos.call('/transaction/confirm', { external_id: `w${n}`, result_code: 'SUCCESS' });
    }
    await until(() => receiver.deliveries.length >= 9);
    const verifier = new WebhookVerifier(secret);
    const seen = receiver.deliveries.map(({ headers, body }) => {
      verifier.verify(body, headers['tps-signature']);
      expect(headers['content-type']).toMatch(/application\/cloudevents\+json/);
      const event = JSON.parse(body);
      expect(cloudEventSchema('v1').safeParse(event).error).toBeUndefined();
      return `${event.data.external_id}:${event.data.state}`;
    });
    expect(seen).toEqual(
      ['w1', 'w2', 'w3'].flatMap((e) => [
        `${e}:PROCESSING`,
        `${e}:AWAITING_CONFIRM`,
        `${e}:CONFIRMED`,
      ]),
    );
    expect(failures).toBeGreaterThan(6);

    // The helper rejects a replayed delivery and a forged one.
    const first = receiver.deliveries[0]!;
    expect(() => verifier.verify(first.body, first.headers['tps-signature'])).toThrow(
      expect.objectContaining({ code: 'REPLAYED' }),
    );
    const forged = signWebhookPayload(first.body, 'whsec_not-the-secret');
    expect(() => verifier.verify(first.body, forged)).toThrow(
      expect.objectContaining({ code: 'SIGNATURE_MISMATCH' }),
    );
    const tampered = first.body.replace('PROCESSING', 'CONFIRMED');
    expect(() => verifier.verify(tampered, signWebhookPayload(first.body, secret))).toThrow(
      expect.objectContaining({ code: 'SIGNATURE_MISMATCH' }),
    );
    const old = signWebhookPayload(first.body, secret, Math.floor(Date.now() / 1000) - 3600);
    expect(() => verifier.verify(first.body, old)).toThrow(
      expect.objectContaining({ code: 'TIMESTAMP_OUTSIDE_TOLERANCE' }),
    );

    // The cursor is saved once the receiver has answered: the backlog reaches 0 just after.
    let listed = await pos.call('/webhook/list', {});
    await until(async () => {
      listed = await pos.call('/webhook/list', {});
      return listed.body.webhooks[0]?.backlog === 0;
    });
    expect(listed.body.webhooks).toEqual([
      expect.objectContaining({ id, enabled: true, backlog: 0 }),
    ]);
    expect(listed.body.webhooks[0].secret).toBeUndefined();
    await pos.call('/webhook/delete', { id });
    await receiver.close();
  });

  it('binary mode carries the CloudEvents attributes in ce- headers', async () => {
    const receiver = await startReceiver();
    const pos = posFor(relay, await relay.newSimulator());
    await pos.call('/webhook/create', {
      url: receiver.url,
      mode: 'binary',
      filter: { type: { eq: TX } },
    });
    await pos.call('/transaction/confirm', { external_id: 'bin', result_code: 'ABORTED' });
    await until(() => receiver.deliveries.length >= 1);
    const { headers, body } = receiver.deliveries[0]!;
    expect(headers).toMatchObject({
      'ce-specversion': '1.0',
      'ce-type': TX,
      'ce-subject': pos.terminalId,
    });
    expect(JSON.parse(body)).toMatchObject({ external_id: 'bin', state: 'COMMITTED' });
    await receiver.close();
  });

  it('retention keeps what a receiver still has to get', async () => {
    const receiver = await startReceiver();
    receiver.respond = () => 503;
    const pos = posFor(relay, await relay.newSimulator());
    const created = await pos.call('/webhook/create', {
      url: receiver.url,
      filter: { type: { eq: TX } },
    });
    await pos.call('/transaction/confirm', { external_id: 'held', result_code: 'ABORTED' });
    await until(async () => {
      const hook = (await pos.call('/webhook/list', {})).body.webhooks[0];
      return hook.backlog === 1 && hook.last_error === 'HTTP 5xx';
    });
    // What retention does a month later (its clock is not moved, so the receiver's
    // outage is not taken for a month-long one).
    const monthLater = new Date(Date.now() + 30 * 86_400_000).toISOString();
    await relay.store.trimEvents(monthLater, await relay.webhooks.oldestNeeded());
    receiver.respond = () => 200;
    await until(() => receiver.deliveries.length === 1);
    expect(JSON.parse(receiver.deliveries[0]!.body).data.external_id).toBe('held');
    await pos.call('/webhook/delete', { id: created.body.webhook.id });
    await receiver.close();
  });

  it('a receiver down past the limit is disabled with the reason, and resumes when enabled', async () => {
    const receiver = await startReceiver();
    receiver.respond = () => 500;
    const pos = posFor(relay, await relay.newSimulator());
    const created = await pos.call('/webhook/create', {
      url: receiver.url,
      filter: { type: { eq: TX } },
    });
    const { id } = created.body.webhook;
    await pos.call('/transaction/confirm', { external_id: 'down', result_code: 'ABORTED' });
    let hook: Record<string, unknown> = {};
    await until(async () => {
      hook = (await pos.call('/webhook/list', {})).body.webhooks[0];
      return hook.enabled === false;
    }, 10_000);
    expect(hook).toMatchObject({ enabled: false, backlog: 1, last_error: 'HTTP 5xx' });
    expect(hook.disabled_reason).toMatch(/HTTP 5xx/);
    receiver.respond = () => 200;
    const enabled = await pos.call('/webhook/enable', { id });
    expect(enabled.body.webhook.enabled).toBe(true);
    await until(() => receiver.deliveries.length === 1);
    expect(JSON.parse(receiver.deliveries[0]!.body).data.external_id).toBe('down');
    await receiver.close();
  });

  it('a receiver its owner disabled gets nothing until enabled, then what happened meanwhile', async () => {
    const receiver = await startReceiver();
    const pos = posFor(relay, await relay.newSimulator());
    const created = await pos.call('/webhook/create', {
      url: receiver.url,
      filter: { type: { eq: TX } },
    });
    const { id } = created.body.webhook;
    const disabled = await pos.call('/webhook/disable', { id });
    expect(disabled.status).toBe(200);
    expect(disabled.body.webhook).toMatchObject({
      enabled: false,
      disabled_reason: 'disabled by its owner',
    });
    await pos.call('/transaction/confirm', { external_id: 'while-off', result_code: 'ABORTED' });
    await until(async () => (await pos.call('/webhook/list', {})).body.webhooks[0]?.backlog === 1);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.deliveries).toEqual([]);
    const enabled = await pos.call('/webhook/enable', { id });
    expect(enabled.body.webhook.enabled).toBe(true);
    await until(() => receiver.deliveries.length === 1);
    expect(JSON.parse(receiver.deliveries[0]!.body).data.external_id).toBe('while-off');
    await pos.call('/webhook/delete', { id });
    await receiver.close();
  });

  it('refuses plain http unless allowed, and another credential cannot touch a webhook', async () => {
    const strict = await startTestRelay({});
    try {
      const pos = posFor(strict, await strict.newSimulator());
      const refused = await pos.call('/webhook/create', { url: 'http://127.0.0.1:9/hook' });
      expect(refused.status).toBe(400);
      expect(refused.body.error.description).toMatch(/https/);
    } finally {
      await strict.close();
    }
    const owner = posFor(relay, await relay.newSimulator());
    const stranger = posFor(relay, await relay.newSimulator());
    const { id } = (await owner.call('/webhook/create', { url: 'https://127.0.0.1:9/hook' })).body
      .webhook;
    const removed = await stranger.call('/webhook/delete', { id });
    expect(removed.status).toBe(404);
    expect(removed.body.error.code).toBe('WEBHOOK_NOT_FOUND');
    await owner.call('/webhook/delete', { id });
  });
});
