/**
 * Rollouts over HTTP (docs/api.md, "Extensions: rollouts"), beside the releases they roll
 * out: start one, list them, read one, pause and resume it. Account credential only.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ROLLOUTS_PATH, RolloutId, RolloutStartRequest } from '../../protocol/index.js';
import type { Authenticator } from '../accounts/authenticator.js';
import { sourceOf } from '../../common/sign-in-throttle.js';
import { ApiError } from '../errors.js';
import type { Rollouts } from '../rollouts/rollouts.js';

export function registerRolloutRoutes(
  app: FastifyInstance,
  rollouts: Rollouts,
  authenticator: Authenticator,
): void {
  const principal = (request: FastifyRequest) =>
    authenticator.authenticate(request.headers.authorization, sourceOf(request.ip));
  const idOf = (request: FastifyRequest) => {
    const id = RolloutId.safeParse((request.params as { id: string }).id);
    if (!id.success) throw new ApiError('ROLLOUT_NOT_FOUND', 'no such rollout');
    return id.data;
  };
  const base = `/pos${ROLLOUTS_PATH}`;
  app.post(base, async (request) => {
    const who = await principal(request);
    return { rollout: await rollouts.start(who, RolloutStartRequest.parse(request.body ?? {})) };
  });
  app.get(base, async (request) => ({ rollouts: await rollouts.list(await principal(request)) }));
  app.get(`${base}/:id`, async (request) => ({
    rollout: await rollouts.get(await principal(request), idOf(request)),
  }));
  app.post(`${base}/:id/pause`, async (request) => ({
    rollout: await rollouts.pause(await principal(request), idOf(request)),
  }));
  app.post(`${base}/:id/resume`, async (request) => ({
    rollout: await rollouts.resume(await principal(request), idOf(request)),
  }));
}
