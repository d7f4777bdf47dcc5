/**
 * The agent's pairing operations (protocol/pairing.ts): unauthenticated, as the agent has
 * no credential yet, so limited per source address by the pairing service instead.
 */
import type { FastifyInstance } from 'fastify';
import {
  PAIRING_OPERATIONS,
  REVISIONS,
  basePath,
  requestedWaitSeconds,
} from '../../protocol/index.js';
import { sourceOf } from '../../common/sign-in-throttle.js';
import { Cancellation } from '../cancellation.js';
import type { Pairings } from '../pairing/pairings.js';
import { sendError } from './errors.js';

export function registerPairingRoutes(
  app: FastifyInstance,
  pairings: Pairings,
  defaultWaitSeconds: number,
): void {
  for (const revision of REVISIONS) {
    const base = basePath(revision);
    for (const path of Object.keys(PAIRING_OPERATIONS)) {
      app.route({
        method: ['GET', 'HEAD', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'],
        url: `${base}${path}`,
        exposeHeadRoute: false,
        onRequest: async (request, reply) => {
          reply.header('Allow', 'POST');
          return sendError(
            reply,
            'METHOD_NOT_ALLOWED',
            `${request.method} is not allowed; use POST`,
          );
        },
        handler: async () => undefined,
      });
    }
    app.post(`${base}/pairing/start`, async (request) => {
      const body = PAIRING_OPERATIONS['/pairing/start'].request.parse(request.body ?? {});
      return pairings.start(body.secret_sha256, sourceOf(request.ip));
    });
    app.post(`${base}/pairing/wait`, async (request) => {
      const body = PAIRING_OPERATIONS['/pairing/wait'].request.parse(request.body ?? {});
      const gone = new Cancellation();
      const socket = request.raw.socket;
      const onClose = () => gone.cancel();
      socket?.once('close', onClose);
      try {
        const waitMs = requestedWaitSeconds(body, defaultWaitSeconds) * 1000;
        return await pairings.wait(body.secret, waitMs, gone, sourceOf(request.ip));
      } finally {
        socket?.off('close', onClose);
      }
    });
  }
}
