/**
 * Rollouts over HTTP (docs/api.md, "Extensions: rollouts"), beside the releases they roll
 * out: start one, list them, read one, pause and resume it. The operator does all of it;
 * a merchant account credential reads the rollouts that reach its account. The console's
 * session reaches them as it reaches the JSON operations.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import {
  ROLLOUTS_PATH,
  RolloutId,
  RolloutListQuery,
  RolloutStartRequest,
} from '../../protocol/index.js';
import type { Principal } from '../accounts/principal.js';
import { ApiError } from '../errors.js';
import { managing, reading, type Rollouts } from '../rollouts/rollouts.js';

export function registerRolloutRoutes(
  app: FastifyInstance,
  rollouts: Rollouts,
  /** The request's principal: the console's session or Basic auth (server.ts). */
  principal: (request: FastifyRequest) => Promise<Principal>,
): void {
  const idOf = (request: FastifyRequest) => {
    const id = RolloutId.safeParse((request.params as { id: string }).id);
    if (!id.success) throw new ApiError('ROLLOUT_NOT_FOUND', 'no such rollout');
    return id.data;
  };
  const base = `/pos${ROLLOUTS_PATH}`;
  app.post(base, async (request) => {
    const who = await principal(request);
    // The role before the body: a credential that may not start one learns nothing of it.
    managing(who);
    return { rollout: await rollouts.start(who, RolloutStartRequest.parse(request.body ?? {})) };
  });
  app.get(base, async (request) => {
    const who = await principal(request);
    reading(who);
    const query = RolloutListQuery.parse(request.query ?? {});
    return { rollouts: await rollouts.list(who, query.account_id) };
  });
  app.get(`${base}/:id`, async (request) => ({
    rollout: await rollouts.get(await principal(request), idOf(request)),
  }));
  for (const action of ['pause', 'resume'] as const) {
    app.post(`${base}/:id/${action}`, async (request) => {
      const who = await principal(request);
      managing(who);
      return { rollout: await rollouts[action](who, idOf(request)) };
    });
  }
}
