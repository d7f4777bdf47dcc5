import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { ChangeNotice } from './change-bus.js';
import { routeNotices } from './notices.js';

function recorder() {
  const seen: string[] = [];
  const route = routeNotices(
    {
      transaction: async (n) => void seen.push(`transaction ${n.externalId}`),
      events: (n) => void seen.push(`events ${n.events ? n.events.length : 'nudge'}`),
      resync: async () => void seen.push('resync'),
      webhooks: async () => {
        seen.push('webhooks');
        throw new Error('the deliverers could not be read');
      },
      simulator: async (id) => void seen.push(`simulator ${id}`),
      credential: async (n) => void seen.push(`credential ${n.type} ${n.username}`),
      account: (id) => void seen.push(`account ${id}`),
      pairing: (n) => void seen.push(`pairing ${n.code ?? 'all'}`),
    },
    pino({ level: 'silent' }),
  );
  return { seen, route };
}

describe('routing change notices from other relays', () => {
  it('hands each kind to its handler; a resync also wakes event and pairing waits', async () => {
    const { seen, route } = recorder();
    const notices: ChangeNotice[] = [
      { kind: 'transaction', terminalId: 't-1', externalId: 'o-1', version: 2 },
      { kind: 'events', events: [{ accountId: 'a', subject: 't-1', kind: 'Transaction' }] },
      { kind: 'resync' },
      { kind: 'simulator', terminalId: 't-9' },
      { kind: 'credential', type: 'AGENT', username: 't-9' },
      { kind: 'pairing', code: 'ABCD2345' },
      { kind: 'command-acked', commandId: 'c-1' },
    ];
    for (const notice of notices) route(notice);
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen).toEqual([
      'transaction o-1',
      'events 1',
      'events nudge',
      'pairing all',
      'resync',
      'simulator t-9',
      'credential AGENT t-9',
      'pairing ABCD2345',
    ]);
  });

  it("keeps listening after a handler fails: one notice's failure is logged, not thrown", async () => {
    const { seen, route } = recorder();
    expect(() => route({ kind: 'webhooks' })).not.toThrow();
    await new Promise((resolve) => setImmediate(resolve));
    route({ kind: 'simulator', terminalId: 't-2' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(seen).toEqual(['webhooks', 'simulator t-2']);
  });
});
