/**
 * The agent's local API (docs/local-mode.md): the spec's operations for this agent's
 * terminal under /pos/v0/ and /pos/v1/, on node's own HTTP server (the relay's fastify
 * stays out of the agent's bundle, packaging/bundle.ts). Every bound of the relay's API
 * holds here too (docs/architecture.md, invariant 9): the body size, the time to send a
 * request, the connections held, the long polls parked. HTTPS unless plain HTTP is
 * asked for by name.
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import { z } from 'zod';
import { systemTimers, type Timers } from '../../common/clock.js';
import { ApiError } from '../../protocol/api-error.js';
import { clientErrorAnswer, describeZodError, errorBody } from '../../protocol/error-body.js';
import { ERROR_CATALOGUE, type ErrorCode } from '../../protocol/errors.js';
import type { Revision } from '../../protocol/fields.js';
import type { TerminalStatus } from '../../protocol/terminal-status.js';
import type { LocalEngine } from '../local/engine.js';
import type { LocalApiAuthenticator } from './authenticator.js';
import { localOperations } from './operations.js';

export interface LocalApiLimits {
  /** Largest request body; more is refused 413 (the relay's bound). */
  bodyBytes: number;
  /** Time to receive a whole request; then 408 and the connection closes. */
  requestTimeoutMs: number;
  /** Time to receive a request's headers; then 408 and the connection closes. */
  headersTimeoutMs: number;
  /** Connections held at once; more are closed at once. */
  maxConnections: number;
  /** Long polls parked at once; a read beyond is refused 429. */
  maxParked: number;
}

/** One terminal's POS, maybe a few: far below the relay's, the same kinds of bound. */
export const DEFAULT_LOCAL_API_LIMITS: LocalApiLimits = {
  bodyBytes: 512 * 1024,
  requestTimeoutMs: 30_000,
  headersTimeoutMs: 10_000,
  maxConnections: 64,
  maxParked: 32,
};

export interface LocalApiOptions {
  host: string;
  port: number;
  /** HTTPS with this identity; undefined serves plain HTTP, for a bench that says so. */
  tls: { key: string | Buffer; cert: string | Buffer } | undefined;
  authenticator: LocalApiAuthenticator;
  engine: LocalEngine;
  status: () => TerminalStatus;
  logger: Pick<Logger, 'info' | 'warn' | 'error'>;
  limits?: Partial<LocalApiLimits>;
  timers?: Timers;
  /** Wait while PROCESSING when a request names no wait (the relay's default: 25 s). */
  defaultWaitSeconds?: number;
}

export interface LocalApi {
  /** Where it listens, e.g. https://192.0.2.10:8443. */
  url: string;
  port: number;
  /** A renewed certificate, for the connections made from now on (HTTPS only). */
  setTls(tls: { key: string | Buffer; cert: string | Buffer }): void;
  /** Answers the parked long polls with what they hold, then ends every connection. */
  close(): Promise<void>;
}

const PATH = /^\/pos\/(v0|v1)(\/[a-z/-]+)$/;

export async function startLocalApi(options: LocalApiOptions): Promise<LocalApi> {
  const limits = { ...DEFAULT_LOCAL_API_LIMITS, ...options.limits };
  let parked = 0;
  // Aborted at close: a parked long poll answers with the state it holds.
  const closing = new AbortController();
  const operations = localOperations({
    engine: options.engine,
    status: options.status,
    timers: options.timers ?? systemTimers,
    defaultWaitSeconds: options.defaultWaitSeconds ?? 25,
    park: () => (parked < limits.maxParked ? (parked++, true) : false),
    unpark: () => void parked--,
  });

  const serverOptions = {
    requestTimeout: limits.requestTimeoutMs,
    headersTimeout: limits.headersTimeoutMs,
    connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
  };
  const onRequest = (request: http.IncomingMessage, response: http.ServerResponse) => {
    serve(request, response).catch((error: unknown) => {
      // A client that went away mid-body is no fault of the agent's.
      if (request.destroyed && response.destroyed) return;
      options.logger.error({ err: error }, 'local API: unexpected error');
      send(response, 'INTERNAL_ERROR', 'unexpected fault; the request may be repeated');
    });
  };
  const server = options.tls
    ? https.createServer(
        { ...serverOptions, key: options.tls.key, cert: options.tls.cert },
        onRequest,
      )
    : http.createServer(serverOptions, onRequest);
  server.maxConnections = limits.maxConnections;
  server.on('clientError', answerClientError);

  async function serve(request: http.IncomingMessage, response: http.ServerResponse) {
    const path = (request.url ?? '').split('?')[0] ?? '';
    const match = PATH.exec(path);
    const op = match ? operations[match[2]!] : undefined;
    if (!match || !op) {
      request.resume();
      return send(response, 'ROUTE_NOT_FOUND', `no operation ${request.method} ${path}`);
    }
    if (request.method !== 'POST') {
      request.resume();
      response.setHeader('allow', 'POST');
      return send(response, 'METHOD_NOT_ALLOWED', `${request.method} is not allowed; use POST`);
    }
    // Authenticated before the body is read, as on the relay.
    const verdict = await options.authenticator.check(
      request.headers.authorization,
      request.socket.remoteAddress ?? '',
    );
    if (!verdict.ok) {
      request.resume();
      if (verdict.status === 429) {
        if (verdict.retryAfterSeconds !== undefined) {
          response.setHeader('retry-after', String(verdict.retryAfterSeconds));
        }
        return send(
          response,
          'TOO_MANY_REQUESTS',
          'too many failed sign-ins; wait for Retry-After',
        );
      }
      response.setHeader('www-authenticate', 'Basic realm="terminal", charset="UTF-8"');
      return send(response, 'UNAUTHORIZED', 'the credential is missing or wrong');
    }
    const body = await readJson(request, limits.bodyBytes);
    if ('error' in body) return send(response, body.error[0], body.error[1]);
    const gone = new AbortController();
    const onClose = () => gone.abort();
    response.once('close', onClose);
    closing.signal.addEventListener('abort', onClose, { once: true });
    try {
      const parsed = op.request.parse(body.value);
      const answer = await op.handle(parsed, {
        revision: match[1] as Revision,
        gone: gone.signal,
      });
      sendJson(response, 200, answer);
    } catch (error) {
      if (error instanceof ApiError) {
        for (const [name, value] of Object.entries(error.headers)) response.setHeader(name, value);
        return send(response, error.code, error.message);
      }
      if (error instanceof z.ZodError) {
        return send(response, 'INVALID_REQUEST', describeZodError(error));
      }
      throw error;
    } finally {
      response.off('close', onClose);
      closing.signal.removeEventListener('abort', onClose);
    }
  }

  // EADDRINUSE and the like reject here; the caller decides whether to try again.
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  options.logger.info({ host: options.host, port, tls: !!options.tls }, 'local API listening');
  return {
    url: `${options.tls ? 'https' : 'http'}://${host}:${port}`,
    port,
    setTls: (tls) => {
      if (server instanceof https.Server) server.setSecureContext({ key: tls.key, cert: tls.cert });
    },
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      closing.abort();
      // One turn for the answers of the polls just released to be written.
      await new Promise((resolve) => setImmediate(resolve));
      server.closeAllConnections();
      await closed;
    },
  };
}

type Body = { value: unknown } | { error: [ErrorCode, string] };

/** The body as JSON, within `limit` bytes; no body at all is an empty request. */
async function readJson(request: http.IncomingMessage, limit: number): Promise<Body> {
  const declared = Number(request.headers['content-length'] ?? NaN);
  if (declared > limit) {
    request.resume();
    return { error: ['BODY_TOO_LARGE', `the body is larger than ${limit} bytes`] };
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      request.resume();
      return { error: ['BODY_TOO_LARGE', `the body is larger than ${limit} bytes`] };
    }
    chunks.push(chunk);
  }
  if (size === 0) return { value: {} };
  const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type !== 'application/json') {
    return {
      error: ['UNSUPPORTED_MEDIA_TYPE', 'the body must be sent as Content-Type: application/json'],
    };
  }
  try {
    return { value: JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown };
  } catch (error) {
    return { error: ['INVALID_JSON', (error as Error).message] };
  }
}

function send(response: http.ServerResponse, code: ErrorCode, description: string): void {
  sendJson(response, ERROR_CATALOGUE[code].status, errorBody(code, description));
}

function sendJson(response: http.ServerResponse, status: number, body: unknown): void {
  if (response.headersSent || response.destroyed) return;
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  response.end(text);
}

/** What node's parser refuses before a request exists, answered with the error object. */
function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  if (socket.writable) socket.write(clientErrorAnswer(error.code));
  socket.destroy();
}
