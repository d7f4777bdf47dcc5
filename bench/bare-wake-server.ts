/**
 * The bare ceiling of the wake-up phase: fastify with the three transaction routes the
 * wake-up clients call, and nothing behind them. A purchase arms a timer of
 * BENCH_BARE_WAKE_DELAY_MS; a get parks until it fires (or answers at once once it has);
 * the timer's firing is this server's "report taken in", noted as the relay notes its
 * reports, and answers the parked gets. No store, no commit, no terminal: what is left
 * is the machine's own delay from an event in a server to its answer read by a client.
 */
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { failStart, send, serveParent } from './child-side.js';
import { epochNow } from './pos-api.js';

interface Bare {
  id: string;
  state: 'PROCESSING' | 'AWAITING_CONFIRM' | 'CONFIRMED';
  updatedAt: number;
  parked: Array<() => void>;
}

interface Body {
  terminal_id: string;
  external_id: string;
}

async function main(): Promise<void> {
  const delayMs = Number(process.env.BENCH_BARE_WAKE_DELAY_MS);
  if (!Number.isFinite(delayMs)) throw new Error('BENCH_BARE_WAKE_DELAY_MS must be set');
  const transactions = new Map<string, Bare>();
  const firedAt = new Map<string, number>();
  let sequence = 0;
  const keyOf = (body: Body) => `${body.terminal_id}\u0000${body.external_id}`;
  const answer = (t: Bare) => ({
    transaction: { id: t.id, state: t.state, updated_at: new Date(t.updatedAt).toISOString() },
  });

  const app = Fastify({ logger: false });
  app.post('/pos/v1/transaction/purchase', async (request) => {
    const t: Bare = {
      id: `bare-${sequence++}`,
      state: 'PROCESSING',
      updatedAt: Date.now(),
      parked: [],
    };
    transactions.set(keyOf(request.body as Body), t);
    setTimeout(() => {
      const at = epochNow();
      firedAt.set(t.id, at);
      t.state = 'AWAITING_CONFIRM';
      t.updatedAt = Math.floor(at);
      for (const wake of t.parked.splice(0)) wake();
    }, delayMs);
    return answer(t);
  });
  app.post('/pos/v1/transaction/get', async (request, reply) => {
    const t = transactions.get(keyOf(request.body as Body));
    if (!t) return reply.code(404).send({ error: { code: 'TRANSACTION_NOT_FOUND' } });
    if (t.state === 'PROCESSING') await new Promise<void>((resolve) => t.parked.push(resolve));
    return answer(t);
  });
  app.post('/pos/v1/transaction/confirm', async (request, reply) => {
    const key = keyOf(request.body as Body);
    const t = transactions.get(key);
    if (!t) return reply.code(404).send({ error: { code: 'TRANSACTION_NOT_FOUND' } });
    transactions.delete(key);
    t.state = 'CONFIRMED';
    t.updatedAt = Date.now();
    return answer(t);
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  serveParent({ reportTimes: () => [...firedAt], stop: () => app.close() });
  send({ type: 'ready', origin: `http://127.0.0.1:${port}` });
}

main().catch(failStart);
