/**
 * The error object and the one catalogue of error codes the API answers with. Every
 * code has a fixed HTTP status; docs/errors.md documents each one and a test keeps the
 * two in step. Clients branch on `code`, never on `description`.
 */
import { z } from 'zod';

export const ErrorObject = z.object({
  code: z.string().min(1).max(63).optional(),
  description: z.string().min(1).max(255).optional(),
});
export const ErrorResponse = z.object({ error: ErrorObject });
export type ErrorResponse = z.infer<typeof ErrorResponse>;

export const ERROR_CATALOGUE = {
  INVALID_REQUEST: {
    status: 400,
    meaning:
      'A field is missing, has the wrong type or breaks a limit; the description names the field.',
  },
  INVALID_JSON: { status: 400, meaning: 'The body is not valid JSON.' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, meaning: 'The body is not sent as application/json.' },
  BODY_TOO_LARGE: { status: 413, meaning: 'The body is larger than the service accepts.' },
  UNAUTHORIZED: { status: 401, meaning: 'Credentials are missing or wrong.' },
  FORBIDDEN: {
    status: 403,
    meaning:
      'The credential is valid but may not use this operation (for example a terminal credential creating simulators).',
  },
  NOT_FOUND: { status: 404, meaning: 'No such transaction or terminal for this credential.' },
  ROUTE_NOT_FOUND: { status: 404, meaning: 'No operation at this path.' },
  METHOD_NOT_ALLOWED: { status: 405, meaning: 'Every operation uses POST.' },
  TERMINAL_NOT_FOUND: {
    status: 400,
    meaning: 'The terminal does not exist or does not belong to this credential.',
  },
  TERMINAL_BUSY: {
    status: 400,
    meaning:
      'Another transaction is still in progress on the terminal; finish or confirm it first.',
  },
  TOO_MANY_UNCONFIRMED: {
    status: 400,
    meaning: 'The terminal has as many unconfirmed transactions as allowed; confirm them first.',
  },
  LOCAL_LIMIT_REACHED: {
    status: 400,
    meaning:
      "The relay is out of the agent's reach and a new transaction would pass a bound its operator set; the description names it (an extension of the spec's codes).",
  },
  IDEMPOTENCY_MISMATCH: {
    status: 400,
    meaning:
      'A transaction with this external_id exists with a different type, amount or currency.',
  },
  TRANSACTION_NOT_FOUND: {
    status: 400,
    meaning:
      'The transaction to confirm or continue does not exist for this credential; only a failure can be confirmed for a transaction the service never saw.',
  },
  INVALID_STATE: {
    status: 400,
    meaning: 'The transaction is not in a state that allows this operation.',
  },
  ORIGINAL_PURCHASE_NOT_FOUND: {
    status: 400,
    meaning: 'The refund names an original purchase that does not exist for this credential.',
  },
  ORIGINAL_PURCHASE_NOT_REFUNDABLE: {
    status: 400,
    meaning: 'The original purchase did not succeed or is not committed or confirmed.',
  },
  REFUND_EXCEEDS_REFUNDABLE: {
    status: 400,
    meaning: 'The refund is larger than what is still refundable on the original purchase.',
  },
  NO_PRINTER: { status: 400, meaning: 'The terminal has no receipt printer.' },
  UNSUPPORTED_BY_TERMINAL: {
    status: 400,
    meaning:
      "The terminal cannot do what the request asks: its card reader lacks the feature, or it has no agent to ask for diagnostics (an extension of the spec's codes).",
  },
  INVALID_PRINT_DATA: { status: 400, meaning: 'The print contents are not valid base64 PNG data.' },
  PRINT_TOO_LARGE: {
    status: 400,
    meaning: 'The print job, joined across continue fragments, is larger than allowed.',
  },
  INVALID_TOKEN: {
    status: 400,
    meaning: 'The next_token was not issued by this service for this account, or was altered.',
  },
  EVENTS_EXPIRED: {
    status: 410,
    meaning:
      'The next_token points before the oldest event still kept (retention deleted the events in between); start a new read.',
  },
  WEBHOOK_NOT_FOUND: { status: 404, meaning: 'No such webhook for this credential.' },
  PAIRING_NOT_FOUND: {
    status: 404,
    meaning:
      'No terminal waits with this pairing code, or no pairing was started with this secret.',
  },
  PAIRING_EXPIRED: {
    status: 410,
    meaning:
      'The pairing code expired before it was claimed (or the paired agent came too late for its credential); pair again.',
  },
  PAIRING_CODE_USED: {
    status: 409,
    meaning: 'The pairing code was claimed already, or its agent collected its credential already.',
  },
  RELEASE_INVALID: {
    status: 400,
    meaning:
      'The release archive is not a release: its paths, entries, size, manifest or file hashes are wrong.',
  },
  RELEASE_SIGNATURE_INVALID: {
    status: 400,
    meaning: 'The release manifest is not signed by the relay’s release key.',
  },
  RELEASE_EXISTS: {
    status: 409,
    meaning: 'The account has published this version for this architecture already.',
  },
  RELEASE_NOT_FOUND: { status: 404, meaning: 'No such release for this credential.' },
  RELEASE_STORAGE_FULL: {
    status: 413,
    meaning:
      'The relay’s release folder would hold more than it may with this archive; nothing is kept.',
  },
  TERMINAL_OFFLINE: {
    status: 409,
    meaning:
      'The terminal is not connected, so it cannot answer a diagnostic request now; ask again once it is.',
  },
  TERMINAL_NO_ANSWER: {
    status: 504,
    meaning:
      'The terminal was connected but did not answer the diagnostic request in time; ask again.',
  },
  DIAGNOSTICS_FAILED: {
    status: 502,
    meaning:
      'The terminal answered that it could not make the diagnostic asked for; the description says why.',
  },
  COHORT_NOT_FOUND: { status: 404, meaning: 'No terminal of this account is in that cohort.' },
  ROLLOUT_NOT_FOUND: { status: 404, meaning: 'No such rollout for this credential.' },
  ROLLOUT_STATE_CONFLICT: {
    status: 409,
    meaning:
      'The rollout is not in a state that allows this: pause a running one, resume a paused one.',
  },
  TOO_MANY_WEBHOOKS: {
    status: 400,
    meaning: 'The credential has as many webhooks as allowed; delete one first.',
  },
  CREDENTIAL_NOT_FOUND: {
    status: 404,
    meaning: 'No such credential in this account.',
  },
  REQUEST_TIMEOUT: {
    status: 408,
    meaning: 'The request was not sent whole in time; the connection is closed.',
  },
  TOO_MANY_REQUESTS: {
    status: 429,
    meaning:
      'Too many failed sign-ins for this username or from this address, too many pairing attempts, or too many requests of this credential waiting; wait for Retry-After.',
  },
  SERVICE_BUSY: {
    status: 503,
    meaning: 'The service is momentarily saturated; repeat the request after Retry-After.',
  },
  OUTCOME_UNKNOWN: {
    status: 504,
    meaning:
      'The terminal decides this in local mode and its answer did not come within the wait; repeat the same request, on either path.',
  },
  INTERNAL_ERROR: {
    status: 500,
    meaning: 'An unexpected fault; the request may be repeated safely.',
  },
} as const satisfies Record<string, { status: number; meaning: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOGUE;
