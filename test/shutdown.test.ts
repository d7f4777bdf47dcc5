/** Closing the relay answers parked long polls at once instead of holding the shutdown. */
import net from 'node:net';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { posFor, post, startTestRelay } from './support/relay.js';

describe('shutdown', () => {
  it('answers parked transaction and event long polls with the current state, then closes', async () => {
    const relay = await startTestRelay();
    const pos = posFor(relay, await relay.newSimulator());
    await pos.call('/transaction/purchase', {
      external_id: 'slow',
      requested_amount: 100020, // 30 s
      currency: 'EUR',
      wait_seconds: 0,
    });
    const parkedGet = pos.call('/transaction/get', { external_id: 'slow', wait_seconds: 60 });
    // Transaction events only: the terminal's own status reports would answer the poll.
    const start = await post(
      relay.baseUrl,
      'v1',
      '/event/list',
      { filter: { type: { eq: 'eu.vendor.api.pos.v0.Transaction' } } },
      pos.credential,
    );
    expect(start.body.events.map((e: { data: { state: string } }) => e.data.state)).toEqual([
      'PROCESSING',
    ]);
    const parkedEvents = post(
      relay.baseUrl,
      'v1',
      '/event/list',
      { next_token: start.body.next_token, wait_seconds: 60 },
      pos.credential,
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    const began = Date.now();
    const closing = relay.close();
    const [get, events] = await Promise.all([parkedGet, parkedEvents]);
    await closing;
    expect(Date.now() - began).toBeLessThan(5000);
    expect(get.status).toBe(200);
    expect(get.body.transaction.state).toBe('PROCESSING');
    expect(events.status).toBe(200);
    expect(events.body.events).toEqual([]);
  });

  it('does not wait for a client connection that never sent a request', async () => {
    const relay = await startTestRelay();
    const silent = net.connect(relay.port, '127.0.0.1');
    await once(silent, 'connect');
    const began = Date.now();
    await relay.close();
    expect(Date.now() - began).toBeLessThan(5000);
    silent.destroy();
  });
});
