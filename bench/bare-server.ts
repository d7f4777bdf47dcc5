/**
 * The bare ceiling: fastify 5 with one JSON POST route behind a Basic-auth header check,
 * nothing else. Run as a child of bench/run.ts (which sets the route and the expected
 * header in the environment); reports its origin over IPC.
 */
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { failStart, send, serveParent } from './child-side.js';

async function main(): Promise<void> {
  const expected = process.env.BENCH_BARE_AUTHORIZATION;
  const route = process.env.BENCH_BARE_PATH;
  if (!expected || !route)
    throw new Error('BENCH_BARE_AUTHORIZATION and BENCH_BARE_PATH must be set');
  const app = Fastify({ logger: false });
  app.addHook('onRequest', async (request, reply) => {
    if (request.headers.authorization !== expected) {
      await reply.code(401).send({ error: { code: 'UNAUTHORIZED' } });
    }
  });
  app.post(route, async (request) => {
    const body = request.body as { terminal_id?: string; external_id?: string };
    return {
      transaction: {
        terminal_id: body.terminal_id,
        external_id: body.external_id,
        state: 'AWAITING_CONFIRM',
        updated_at: new Date().toISOString(),
      },
    };
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as AddressInfo;
  serveParent({ stop: () => app.close() });
  send({ type: 'ready', origin: `http://127.0.0.1:${port}` });
}

main().catch(failStart);
