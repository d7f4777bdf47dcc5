/**
 * One POST of JSON to the service: Basic authentication, a time-out per request that
 * grows by the long-poll wait the body asks for, classification of every failure into a
 * TpsError, and repeats of requests that are safe to repeat (network errors, time-outs,
 * 408/429/5xx, honouring Retry-After), over the cloud path and, when one is given, the
 * terminal's local path (docs/local-mode.md): a request the one path cannot carry goes to
 * the other at once, and a path that failed so is passed over for a while.
 */
import type { z } from 'zod';
import { Backoff, parseRetryAfter, type RetryPolicy } from '../common/backoff.js';
import { unreachableText } from '../common/network-error.js';
import { TpsError, toTpsError } from './errors.js';
import { DEFAULT_RETRY, systemTiming, type Timing } from './timing.js';

export interface TransportOptions {
  /** Base address with the version segment, e.g. http://127.0.0.1:8080/pos/v1 */
  baseUrl: string;
  username: string;
  password: string;
  /** Time-out of a request beyond any long-poll wait it asks for (default 15 s). */
  timeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  timing?: Timing;
  /** Another fetch (a proxy agent, a test double of the network). */
  fetch?: typeof fetch;
  userAgent?: string;
  /** The terminal's own agent on the shop's network: a second path to the same terminal. */
  local?: LocalPath;
}

export interface LocalPath {
  /** Base address with the version segment, e.g. https://192.168.1.20:8443/pos/v1 */
  baseUrl: string;
  /** The fetch that reaches it (one that trusts the relay-issued certificate: local-trust.ts). */
  fetch?: typeof fetch;
  /** `cloud` (default): the local path only when the cloud cannot be reached; `local`: the other way round. */
  prefer?: 'cloud' | 'local';
  /** How long a path that could not be reached is passed over (default 30 s). */
  holdMs?: number;
}

/** A way to the service: the relay (`cloud`) or the terminal's agent (`local`). */
interface Route {
  name: 'cloud' | 'local';
  baseUrl: string;
  fetch: typeof fetch;
  /** Until when it is passed over (ms since the epoch) after failing to carry a request. */
  heldUntil: number;
}

export interface CallOptions {
  signal?: AbortSignal;
  /** Overrides the transport's time-out for this request (beyond any long-poll wait). */
  timeoutMs?: number;
  /** `false`: a single attempt. Only operations that cannot double anything are repeated. */
  retry?: false | Partial<RetryPolicy>;
}

export interface Exchange<T> {
  operation: string;
  body: unknown;
  /** How long the service may hold the request (long poll), in ms. */
  waitMs: number;
  /** Whether repeating the request can never double anything. */
  idempotent: boolean;
  /** Turns a 200 body into the operation's answer; throws INVALID_RESPONSE otherwise. */
  parse: (body: unknown) => T;
}

export const DEFAULT_TIMEOUT_MS = 15_000;
const DEFAULT_HOLD_MS = 30_000;

/** Answers that say a path, not the request, failed: the other path may carry it. */
const PATH_STATUSES = new Set([502, 503, 504]);

/**
 * Whether the failure is the path's (the relay or the agent out of reach, overloaded, or
 * not knowing the outcome: `504 OUTCOME_UNKNOWN`), so the other path should be tried.
 */
function isPathFailure(failure: TpsError): boolean {
  return failure.network || failure.timeout || PATH_STATUSES.has(failure.status ?? 0);
}

/** Codes of a connection that was never made: the request cannot have been sent. */
const NOT_CONNECTED =
  /^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|UND_ERR_CONNECT_TIMEOUT)$/;

function neverSent(failure: TpsError): boolean {
  for (
    let cause: unknown = failure.cause, depth = 0;
    cause instanceof Error && depth < 5;
    depth++
  ) {
    const { code, errors } = cause as Error & { code?: unknown; errors?: unknown };
    if (typeof code === 'string' && NOT_CONNECTED.test(code)) return true;
    cause = Array.isArray(errors) ? errors[0] : cause.cause;
  }
  return false;
}

export class Transport {
  private readonly authorization: string;
  private readonly timing: Timing;
  /** In the order of preference. */
  private readonly routes: Route[];
  private readonly holdMs: number;

  constructor(private readonly options: TransportOptions) {
    this.authorization = `Basic ${Buffer.from(`${options.username}:${options.password}`).toString('base64')}`;
    this.timing = options.timing ?? systemTiming;
    const cloud: Route = {
      name: 'cloud',
      baseUrl: options.baseUrl,
      fetch: options.fetch ?? globalThis.fetch,
      heldUntil: 0,
    };
    const { local } = options;
    this.holdMs = local?.holdMs ?? DEFAULT_HOLD_MS;
    if (!local) {
      this.routes = [cloud];
      return;
    }
    const localRoute: Route = {
      name: 'local',
      baseUrl: local.baseUrl,
      fetch: local.fetch ?? globalThis.fetch,
      heldUntil: 0,
    };
    this.routes = local.prefer === 'local' ? [localRoute, cloud] : [cloud, localRoute];
  }

  get baseUrl(): string {
    return this.options.baseUrl;
  }

  /** The path the next request takes first: the preferred one unless it is passed over. */
  get nextPath(): 'cloud' | 'local' {
    return this.ordered()[0]!.name;
  }

  private ordered(): Route[] {
    const now = this.timing.now();
    const open = this.routes.filter((route) => route.heldUntil <= now);
    const held = this.routes.filter((route) => route.heldUntil > now);
    return [...open, ...held];
  }

  async post<T>(exchange: Exchange<T>, call: CallOptions = {}): Promise<T> {
    const policy: RetryPolicy = {
      ...DEFAULT_RETRY,
      ...this.options.retry,
      ...(call.retry === false ? { maxAttempts: 1 } : call.retry),
    };
    const attempts = exchange.idempotent ? Math.max(1, policy.maxAttempts) : 1;
    const backoff = new Backoff({ ...policy, random: this.timing.random });
    for (let attempt = 1; ; attempt++) {
      let failure: TpsError | undefined;
      // Each attempt tries the paths in turn: a request one path cannot carry goes to the
      // other at once. A request that is not idempotent goes on only if it never left.
      for (const route of this.ordered()) {
        try {
          const answer = await this.once(route, exchange, call);
          route.heldUntil = 0;
          return answer;
        } catch (error) {
          failure = toTpsError(error, exchange.operation);
          if (!isPathFailure(failure) || call.signal?.aborted) break;
          route.heldUntil = this.timing.now() + this.holdMs;
          if (!exchange.idempotent && !neverSent(failure)) break;
        }
      }
      if (!failure!.retryable || attempt >= attempts || call.signal?.aborted) throw failure!;
      await this.timing.sleep(backoff.next(failure!.retryAfterMs), call.signal);
      if (call.signal?.aborted) throw abortedDuring(exchange.operation, call.signal);
    }
  }

  private async once<T>(route: Route, exchange: Exchange<T>, call: CallOptions): Promise<T> {
    const { operation } = exchange;
    if (call.signal?.aborted) throw abortedDuring(operation, call.signal);
    const timeoutMs =
      (call.timeoutMs ?? this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS) + exchange.waitMs;
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), timeoutMs);
    const signal = call.signal ? AbortSignal.any([call.signal, timeout.signal]) : timeout.signal;
    const url = `${route.baseUrl}${operation}`;
    try {
      const response = await route.fetch(url, {
        method: 'POST',
        headers: {
          authorization: this.authorization,
          'content-type': 'application/json',
          accept: 'application/json',
          'user-agent': this.options.userAgent ?? 'tps-pos-client/0.1',
        },
        body: JSON.stringify(exchange.body),
        signal,
      });
      const text = await response.text();
      return interpret(response.status, response.headers, text, exchange, this.timing.now());
    } catch (error) {
      if (error instanceof TpsError) throw error;
      if (call.signal?.aborted) throw abortedDuring(operation, call.signal);
      if (timeout.signal.aborted) {
        throw new TpsError({
          code: 'TIMEOUT',
          timeout: true,
          operation,
          message: `${operation}: no answer within ${timeoutMs} ms`,
        });
      }
      throw new TpsError({
        code: 'NETWORK_ERROR',
        network: true,
        operation,
        cause: error,
        message: `${operation}: ${unreachableText(url, error)}`,
      });
    } finally {
      clearTimeout(timer);
    }
  }
}

function abortedDuring(operation: string, signal: AbortSignal): TpsError {
  const reason = signal.reason instanceof Error ? signal.reason.message : 'aborted';
  return new TpsError({
    code: 'ABORTED',
    aborted: true,
    operation,
    message: `${operation}: ${reason}`,
  });
}

/** Classifies an answer: the parsed 2xx body, or a TpsError carrying the error object's code. */
export function interpret<T>(
  status: number,
  headers: Headers,
  text: string,
  exchange: Pick<Exchange<T>, 'operation' | 'parse'>,
  now: number,
): T {
  const { operation } = exchange;
  let body: unknown;
  let json = true;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = false;
  }
  if (status >= 200 && status < 300) {
    if (!json) {
      throw new TpsError({
        code: 'INVALID_RESPONSE',
        status,
        operation,
        message: `${operation}: the answer is not JSON`,
      });
    }
    return exchange.parse(body);
  }
  const error = errorObject(body);
  const retryAfterMs = parseRetryAfter(headers.get('retry-after'), now);
  const code = error.code ?? 'HTTP_ERROR';
  throw new TpsError({
    code,
    status,
    operation,
    ...(error.description !== undefined ? { description: error.description } : {}),
    ...(retryAfterMs !== undefined ? { retryAfterMs } : {}),
    message: `${operation}: HTTP ${status} ${code}${error.description ? `: ${error.description}` : ''}`,
  });
}

function errorObject(body: unknown): { code?: string; description?: string } {
  if (typeof body !== 'object' || body === null || !('error' in body)) return {};
  const error = (body as { error: unknown }).error;
  if (typeof error !== 'object' || error === null) return {};
  const { code, description } = error as { code?: unknown; description?: unknown };
  return {
    ...(typeof code === 'string' ? { code } : {}),
    ...(typeof description === 'string' ? { description } : {}),
  };
}

/**
 * Parses with the exact schema; when that fails, with a looser one that keeps only what
 * the client must rely on, so that a newer service (an unknown card scheme, a new enum
 * value) never makes a payment unreadable. Throws INVALID_RESPONSE when both fail.
 */
export function lenientParser<T>(
  operation: string,
  exact: z.ZodType,
  loose: z.ZodType,
): (body: unknown) => T {
  return (body) => {
    // The schemas only check: the body is kept whole, members from a newer service and all.
    const strict = exact.safeParse(body);
    if (strict.success || loose.safeParse(body).success) return body as T;
    throw new TpsError({
      code: 'INVALID_RESPONSE',
      status: 200,
      operation,
      message: `${operation}: unexpected answer: ${strict.error.issues
        .slice(0, 3)
        .map((i) => `${i.path.join('.') || 'body'}: ${i.message}`)
        .join('; ')}`,
    });
  };
}
