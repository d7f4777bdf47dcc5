/**
 * The HTTP API: fastify with its pino logger, every operation under /pos/v0 and /pos/v1,
 * the OpenAPI documents beside them. Requests are authenticated before their body is
 * read, parsed by the operation's zod schema, and answered with the spec's shapes.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import {
  OPERATIONS,
  REVISIONS,
  basePath,
  type OperationPath,
  type Revision,
} from '../../protocol/index.js';
import type { Authenticator } from '../accounts/authenticator.js';
import { sourceOf } from '../../common/sign-in-throttle.js';
import { Cancellation } from '../cancellation.js';
import { RequestLogger } from './request-logger.js';
import type { Principal } from '../accounts/principal.js';
import { checkRole } from '../accounts/roles.js';
import { registerOpsRoutes, type Readiness } from '../ops/ops-routes.js';
import { registerConsole, sessionPrincipal, type ConsoleOptions } from '../console/routes.js';
import type { RelayMetrics } from '../ops/metrics.js';
import { handleClientError, handleError, sendError } from './errors.js';
import { openApiDocument } from './openapi.js';
import { operationHandlers, type OperationDeps } from './operations.js';
import { registerPairingRoutes } from './pairing-routes.js';
import { registerReleaseRoutes, type ReleaseRouteOptions } from './release-routes.js';
import { registerRolloutRoutes } from './rollout-routes.js';
import type { Rollouts } from '../rollouts/rollouts.js';

export interface HttpServerOptions extends OperationDeps {
  authenticator: Authenticator;
  logger: Logger;
  tls?: { certFile: string; keyFile: string };
  /** Public base address without the version segment, for the OpenAPI `servers`. */
  publicUrl?: string;
  /** /health, /ready and /metrics for load balancers and operators. */
  ops?: { readiness: Readiness; metrics: RelayMetrics };
  /**
   * Proxies whose X-Forwarded-For names the client (TPS_TRUST_PROXY): addresses and CIDR
   * ranges separated by commas. The client's address is the source the sign-in limits
   * count by.
   */
  trustProxy?: string;
  /** Bounds on connections and on how slowly a request may arrive (docs/security.md). */
  limits?: HttpLimits;
  /** The web console at /console/, whose session cookie also authenticates the API. */
  console?: ConsoleOptions;
  /** Agent releases: publishing, listing and downloading (docs/fleet.md, "Releases"). */
  releases?: Omit<ReleaseRouteOptions, 'authenticator' | 'principalOf'>;
  /** Rollouts of releases to cohorts (docs/fleet.md, "Rollouts"). */
  rollouts?: Rollouts;
}

export interface HttpLimits {
  /** Time to receive a whole request, headers and body; then 408 and the connection closes. */
  requestTimeoutMs: number;
  /** Time to receive a request's headers; then 408 and the connection closes. */
  headersTimeoutMs: number;
  /** Connections held at once; more are closed at once. */
  maxConnections: number;
}

/** Node's defaults would let a client take 5 min to send a request and open any number. */
export const DEFAULT_HTTP_LIMITS: HttpLimits = {
  requestTimeoutMs: 30_000,
  headersTimeoutMs: 10_000,
  maxConnections: 10_000,
};

/** A print body is at most 262,143 base64 characters; this leaves room for the rest. */
const BODY_LIMIT = 512 * 1024;

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
}

/** What an incoming `x-request-id` may be: short, printable, no spaces or quotes. */
const REQUEST_ID = /^[\w.:\-/+=@]{1,128}$/;

/**
 * A random UUID as one flat string. randomUUID() answers a tree of joined pieces (about
 * 490 bytes against 64), which a request keeps for as long as it is parked.
 */
const newRequestId = () => Buffer.from(randomUUID(), 'latin1').toString('latin1');

export function buildHttpServer(options: HttpServerOptions): FastifyInstance {
  const limits = options.limits ?? DEFAULT_HTTP_LIMITS;
  const timeouts = {
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    // Node checks the time-outs every 30 s by default, which would let a slow client keep
    // its connection long past them.
    connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
  };
  const app = Fastify({
    loggerInstance: options.logger,
    childLoggerFactory: RequestLogger.create,
    bodyLimit: BODY_LIMIT,
    // A caller's request id is kept (so one id follows a request through proxies and
    // logs) if it looks like one; otherwise a random UUID, unique across relays.
    requestIdHeader: false,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : newRequestId();
    },
    requestTimeout: limits.requestTimeoutMs,
    http: timeouts,
    clientErrorHandler: handleClientError,
    ...(options.trustProxy ? { trustProxy: options.trustProxy } : {}),
    // At close, parked long polls have already been answered (Relay.close): cut every
    // remaining connection, including ones that never sent a request, or close waits on them.
    forceCloseConnections: true,
    ...(options.tls
      ? {
          https: {
            ...timeouts,
            cert: fs.readFileSync(options.tls.certFile),
            key: fs.readFileSync(options.tls.keyFile),
            minVersion: 'TLSv1.2' as const,
          },
        }
      : {}),
  }) as unknown as FastifyInstance;

  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });
  // Beyond it node closes a new connection at once, before a byte is read.
  app.server.maxConnections = limits.maxConnections;
  app.setErrorHandler(handleError);
  // Only JSON bodies: fastify's built-in text/plain parser would let a string through
  // to the schema, which then answers a misleading 400 instead of 415.
  app.removeContentTypeParser('text/plain');
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    return sendError(reply, 'ROUTE_NOT_FOUND', `no operation ${request.method} ${path}`);
  });

  const sessions = options.console?.sessions;
  /** Who sends a request: the console's session (with its CSRF header), else Basic auth. */
  const principalOf = async (request: FastifyRequest): Promise<Principal> =>
    (sessions && (await sessionPrincipal(sessions, request))) ??
    (await options.authenticator.authenticate(request.headers.authorization, sourceOf(request.ip)));

  if (options.ops) registerOpsRoutes(app, options.ops);
  registerPairingRoutes(app, options.pairings, options.defaultWaitSeconds);
  if (options.releases) {
    registerReleaseRoutes(app, {
      ...options.releases,
      authenticator: options.authenticator,
      principalOf,
    });
  }
  if (options.rollouts) registerRolloutRoutes(app, options.rollouts, principalOf);
  if (options.console) registerConsole(app, options.console);

  const handlers = operationHandlers(options);
  for (const revision of REVISIONS) {
    for (const [path, spec] of Object.entries(OPERATIONS) as Array<
      [OperationPath, (typeof OPERATIONS)[OperationPath]]
    >) {
      const url = `${basePath(revision)}${path}`;
      const handle = handlers[path];
      // Other methods answer 405 before any body is read, however broken the body is.
      app.route({
        method: ['GET', 'HEAD', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'],
        url,
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
      app.post(url, {
        onRequest: async (request) => {
          try {
            request.principal = await principalOf(request);
          } catch (error) {
            const code = (error as { code?: unknown }).code;
            // Refusals by a limit are counted in the metrics; one line each would let a
            // guesser fill the log at the rate it can send requests.
            const limited = code === 'TOO_MANY_REQUESTS' || code === 'SERVICE_BUSY';
            request.log[limited ? 'debug' : 'warn'](
              { username: basicUsername(request.headers.authorization), source: request.ip, code },
              'authentication failed',
            );
            throw error;
          }
          checkRole(path, request.principal.role);
        },
        handler: async (request) => {
          // No body at all is an empty request; `null` and other non-objects are refused.
          const body = spec.request.parse(request.body === undefined ? {} : request.body);
          const gone = new Cancellation();
          const socket = request.raw.socket;
          const onClose = () => gone.cancel();
          socket?.once('close', onClose);
          try {
            return await handle(body, {
              revision: revision as Revision,
              principal: request.principal!,
              gone,
              request,
            });
          } finally {
            socket?.off('close', onClose);
          }
        },
      });
    }
    const document = openApiDocument(revision, options.publicUrl);
    const docUrl = `${basePath(revision)}/openapi.json`;
    app.get(docUrl, async () => document);
  }
  return app;
}

/** The username of a Basic header, for logging a failed sign-in (never the password). */
function basicUsername(header: string | undefined): string | undefined {
  const encoded = /^Basic\s+(\S+)/i.exec(header ?? '')?.[1];
  if (!encoded) return undefined;
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon > 0 ? decoded.slice(0, Math.min(colon, 64)) : undefined;
}
