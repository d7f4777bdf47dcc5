/**
 * followEvents against the relay's `POST /event/list`: a payment's events in order, the
 * type filter, resuming from a token, a long poll cut mid-wait, and a quiet end on abort.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ApiClient,
  MemoryJournal,
  PosClient,
  followEvents,
  type PosEvent,
} from '../client/index.js';
import { FaultyProxy } from './support/faulty-proxy.js';
import { startTestRelay, type TestRelay } from './support/relay.js';

let relay: TestRelay;
let direct: FaultyProxy;
beforeAll(async () => {
  relay = await startTestRelay({ simulatorDelayMs: 100 });
  direct = await FaultyProxy.start(relay.baseUrl);
});
afterAll(async () => {
  await direct.close();
  await relay.close();
});

async function newPos(baseUrl = direct.baseUrl) {
  const sim = await relay.newSimulator();
  const pos = new PosClient({
    baseUrl,
    ...relay.account,
    terminalId: sim.terminal_id,
    journal: new MemoryJournal(),
    backoff: { initialMs: 10, maxMs: 50 },
  });
  return { pos, terminalId: sim.terminal_id };
}

/** Collects events until `done` says so (or `signal` aborts). */
async function collect<T>(events: AsyncIterable<T>, done: (seen: T[]) => boolean): Promise<T[]> {
  const seen: T[] = [];
  for await (const event of events) {
    seen.push(event);
    if (done(seen)) break;
  }
  return seen;
}

const confirmedTransaction = (seen: PosEvent[]) =>
  seen.some((e) => e.kind === 'Transaction' && e.transaction.state === 'CONFIRMED');

describe('followEvents', () => {
  it("follows a payment's transaction and terminal events, in order, as they happen", async () => {
    const { pos, terminalId } = await newPos();
    // Until the confirm and the reader's last screen text, which the agent reports within
    // 20 ms of showing it: it may come after the confirm.
    const following = collect(
      pos.events({ waitSeconds: 5 }),
      (seen) =>
        confirmedTransaction(seen) &&
        seen.some((e) => e.kind === 'TerminalStatus' && e.status.screen_message === 'Approved'),
    );
    const paid = await pos.pay({ external_id: 'ev-1', requested_amount: 1000, currency: 'EUR' });
    await paid.settled;
    const seen = await following;
    const states = seen.flatMap((e) => (e.kind === 'Transaction' ? [e.transaction.state] : []));
    expect(states).toEqual(['PROCESSING', 'AWAITING_CONFIRM', 'CONFIRMED']);
    const screens = seen.flatMap((e) =>
      e.kind === 'TerminalStatus' ? [e.status.screen_message] : [],
    );
    expect(screens).toContain('Approved');
    for (const { event } of seen) {
      expect(event).toMatchObject({ specversion: '1.0', subject: terminalId });
      expect(event.type).toMatch(/^eu\.[^.]+\.api\.pos\.v0\.(Transaction|TerminalStatus)$/);
    }
    await pos.close();
  });

  it('keeps to one kind with type, and resumes from a token without repeating', async () => {
    const { pos } = await newPos();
    await (
      await pos.pay({ external_id: 'ev-2', requested_amount: 100002, currency: 'EUR' })
    ).settled;
    const first = await collect(
      pos.events({ type: 'Transaction', waitSeconds: 0, follow: false }),
      () => false,
    );
    expect(first.map((e) => e.kind)).toEqual(['Transaction', 'Transaction', 'Transaction']);
    const token = first.at(-1)!.nextToken;

    await (
      await pos.pay({ external_id: 'ev-3', requested_amount: 100002, currency: 'EUR' })
    ).settled;
    const resumed = await collect(
      pos.events({ type: 'Transaction', nextToken: token, waitSeconds: 0, follow: false }),
      () => false,
    );
    expect(resumed.map((e) => (e.kind === 'Transaction' ? e.transaction.external_id : ''))).toEqual(
      ['ev-3', 'ev-3', 'ev-3'],
    );
    await pos.close();
  });

  it('repeats a long poll cut mid-wait from the same token, losing nothing', async () => {
    const proxy = await FaultyProxy.start(relay.baseUrl);
    const { pos, terminalId } = await newPos();
    proxy.plan({ match: '/event/list', fault: 'cut-in-flight', afterMs: 50, times: 3 });
    const api = new ApiClient({ baseUrl: proxy.baseUrl, ...relay.account });
    const retries: string[] = [];
    const following = collect(
      followEvents(api, {
        subject: terminalId,
        waitSeconds: 5,
        backoff: { initialMs: 5, maxMs: 20 },
        onRetry: (error) => retries.push(error.code),
      }),
      confirmedTransaction,
    );
    await (
      await pos.pay({ external_id: 'ev-4', requested_amount: 900, currency: 'EUR' })
    ).settled;
    const seen = await following;
    expect(retries).toEqual(['NETWORK_ERROR', 'NETWORK_ERROR', 'NETWORK_ERROR']);
    const reference = await collect(
      pos.events({ waitSeconds: 0, follow: false }),
      confirmedTransaction,
    );
    expect(seen.map((e) => e.event.id)).toEqual(reference.map((e) => e.event.id));
    await pos.close();
    await proxy.close();
  });

  it('ends quietly when its signal aborts a long poll', async () => {
    const { pos } = await newPos();
    const controller = new AbortController();
    const iterating = collect(
      pos.events({ waitSeconds: 30, signal: controller.signal }),
      () => false,
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    const started = Date.now();
    controller.abort();
    await expect(iterating).resolves.toEqual(expect.any(Array));
    expect(Date.now() - started).toBeLessThan(1000);
    await pos.close();
  });
});
