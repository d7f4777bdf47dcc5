/**
 * The one error type of the client. Callers branch on `code` (the service's error code
 * from protocol/errors.ts, or one of the client's own below) and on the flags, never on
 * the message: `network` and `timeout` mean the request may or may not have reached the
 * service; `retryable` says whether repeating it can help.
 */
import type { AnyTransaction } from './types.js';
import type { ErrorCode } from '../protocol/index.js';

/** Codes the client raises itself, beside the service's catalogue. */
export const CLIENT_ERROR_CODES = {
  NETWORK_ERROR:
    'No answer: the connection was refused, reset or closed. The service may or may not have acted on the request.',
  TIMEOUT:
    'No answer within the request time-out. The service may or may not have acted on the request.',
  ABORTED: 'The caller aborted the request or the payment.',
  HTTP_ERROR: 'A non-2xx answer without an error code in its body.',
  INVALID_RESPONSE: 'A 2xx answer that is not the JSON the operation promises.',
  INVALID_ARGUMENT: 'The request breaks the protocol schema; nothing was sent.',
  CLIENT_CLOSED:
    'The client was closed while the call ran; the journal keeps the payment for recovery.',
  JOURNAL_CONFLICT: 'The journal holds this external_id with a different request.',
  JOURNAL_LOCKED: 'Another client holds the journal file.',
  UNKNOWN_PAYMENT: 'The journal holds no payment with this external_id.',
  UNEXPECTED: 'A fault inside the client that is none of the above (a bug or a broken journal).',
} as const;
export type ClientErrorCode = keyof typeof CLIENT_ERROR_CODES;

/** A service code, a client code, or a code from a newer service. */
export type TpsErrorCode = ErrorCode | ClientErrorCode | (string & {});

export interface TpsErrorInit {
  code: TpsErrorCode;
  message: string;
  status?: number;
  network?: boolean;
  timeout?: boolean;
  aborted?: boolean;
  retryAfterMs?: number;
  /** The error object's description, as the service sent it. */
  description?: string;
  /** The operation path, e.g. `/transaction/purchase`. */
  operation?: string;
  externalId?: string;
  /** The service's view of the transaction, where one is known (a result conflict). */
  transaction?: AnyTransaction;
  cause?: unknown;
}

export class TpsError extends Error {
  readonly code: TpsErrorCode;
  /** HTTP status when the service answered; undefined when it did not. */
  readonly status: number | undefined;
  readonly network: boolean;
  readonly timeout: boolean;
  readonly aborted: boolean;
  /** Network errors, time-outs, 408, 429 and 5xx: the same request may succeed later. */
  readonly retryable: boolean;
  readonly retryAfterMs: number | undefined;
  readonly description: string | undefined;
  readonly operation: string | undefined;
  readonly externalId: string | undefined;
  readonly transaction: AnyTransaction | undefined;

  constructor(init: TpsErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'TpsError';
    this.code = init.code;
    this.status = init.status;
    this.network = init.network ?? false;
    this.timeout = init.timeout ?? false;
    this.aborted = init.aborted ?? false;
    const status = init.status ?? 0;
    this.retryable =
      !this.aborted &&
      (this.network || this.timeout || status >= 500 || status === 429 || status === 408);
    this.retryAfterMs = init.retryAfterMs;
    this.description = init.description;
    this.operation = init.operation;
    this.externalId = init.externalId;
    this.transaction = init.transaction;
  }

  /** The same error, naming the payment it concerns. */
  forPayment(externalId: string, transaction?: AnyTransaction): TpsError {
    return new TpsError({
      ...this.init(),
      externalId,
      ...(transaction ? { transaction } : {}),
    });
  }

  private init(): TpsErrorInit {
    return {
      code: this.code,
      message: this.message,
      network: this.network,
      timeout: this.timeout,
      aborted: this.aborted,
      cause: this.cause,
      ...(this.status !== undefined ? { status: this.status } : {}),
      ...(this.retryAfterMs !== undefined ? { retryAfterMs: this.retryAfterMs } : {}),
      ...(this.description !== undefined ? { description: this.description } : {}),
      ...(this.operation !== undefined ? { operation: this.operation } : {}),
      ...(this.transaction !== undefined ? { transaction: this.transaction } : {}),
    };
  }

  /** A plain object for logs and JSON output. */
  toJSON() {
    return {
      code: this.code,
      message: this.message,
      ...(this.status !== undefined ? { status: this.status } : {}),
      ...(this.description !== undefined ? { description: this.description } : {}),
      ...(this.externalId !== undefined ? { external_id: this.externalId } : {}),
      network: this.network,
      timeout: this.timeout,
      aborted: this.aborted,
      retryable: this.retryable,
    };
  }
}

export const isTpsError = (error: unknown): error is TpsError => error instanceof TpsError;

/** Any thrown value as a TpsError (unexpected ones keep their message and cause). */
export function toTpsError(error: unknown, operation?: string): TpsError {
  if (error instanceof TpsError) return error;
  return new TpsError({
    code: 'UNEXPECTED',
    message: error instanceof Error ? error.message : String(error),
    cause: error,
    ...(operation ? { operation } : {}),
  });
}

export const abortedError = (message = 'aborted', externalId?: string) =>
  new TpsError({ code: 'ABORTED', aborted: true, message, ...(externalId ? { externalId } : {}) });
