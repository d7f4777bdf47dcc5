/**
 * Endpoints for the load balancer and the operator, beside the API: GET /health (the
 * process answers), GET /ready (it should get traffic: not draining, store and broker
 * reachable) and GET /metrics (Prometheus). No credential: they carry no account data;
 * expose them on the internal network only (docs/deploy.md).
 */
import type { FastifyInstance } from 'fastify';
import type { RelayMetrics } from './metrics.js';

export interface Readiness {
  /** Each check by name: true when it passes, else why not. */
  check(): Promise<Record<string, true | string>>;
}

export function registerOpsRoutes(
  app: FastifyInstance,
  options: { readiness: Readiness; metrics: RelayMetrics },
): void {
  const { readiness, metrics } = options;
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    metrics.httpRequests.inc({ method: request.method, route, status: String(reply.statusCode) });
    metrics.httpDuration.observe({ route }, reply.elapsedTime / 1000);
  });
  app.get('/health', async () => ({ status: 'ok' }));
  app.get('/ready', async (_request, reply) => {
    const checks = await readiness.check();
    const ready = Object.values(checks).every((c) => c === true);
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not ready', checks });
  });
  app.get('/metrics', async (_request, reply) => {
    const text = await metrics.registry.metrics();
    return reply.type(metrics.registry.contentType).send(text);
  });
}
