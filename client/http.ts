/**
 * One POST of JSON to the service: Basic authentication, a time-out per request that
 * grows by the long-poll wait the body asks for, classification of every failure into a
 * TpsError, and repeats of requests that are safe to repeat (network errors, time-outs,
 * 408/429/5xx, honouring Retry-After).
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

export class Transport {
  private readonly authorization: string;
  private readonly timing: Timing;
  private readonly fetch: typeof fetch;

  constructor(private readonly options: TransportOptions) {
    this.authorization = `Basic ${Buffer.from(`${options.username}:${options.password}`).toString('base64')}`;
    this.timing = options.timing ?? systemTiming;
    this.fetch = options.fetch ?? globalThis.fetch;
  }

  get baseUrl(): string {
    return this.options.baseUrl;
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
      try {
        return await this.once(exchange, call);
      } catch (error) {
        const failure = toTpsError(error, exchange.operation);
        if (!failure.retryable || attempt >= attempts || call.signal?.aborted) throw failure;
        await this.timing.sleep(backoff.next(failure.retryAfterMs), call.signal);
        if (call.signal?.aborted) throw abortedDuring(exchange.operation, call.signal);
      }
    }
  }

  private async once<T>(exchange: Exchange<T>, call: CallOptions): Promise<T> {
    const { operation } = exchange;
    if (call.signal?.aborted) throw abortedDuring(operation, call.signal);
    const timeoutMs =
      (call.timeoutMs ?? this.options.timeoutMs ?? DEFAULT_TIMEOUT_MS) + exchange.waitMs;
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), timeoutMs);
    const signal = call.signal ? AbortSignal.any([call.signal, timeout.signal]) : timeout.signal;
    const url = `${this.options.baseUrl}${operation}`;
    try {
      const response = await this.fetch(url, {
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
