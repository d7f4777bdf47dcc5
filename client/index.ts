/**
 * The POS client: a typed client for every operation (ApiClient), the payment flow with
 * its journal (PosClient), and events (followEvents). docs/client.md shows the use.
 */
export {
  ApiClient,
  type ApiClientOptions,
  type CallOptions,
  type RawCloudEvent,
} from './api-client.js';
export {
  PosClient,
  type PosClientOptions,
  type PurchaseInput,
  type RefundInput,
  type PayOptions,
  type RecoverOptions,
} from './pos-client.js';
export type { PaymentResult, Settlement, PosClientEvent } from './payment.js';
export {
  TpsError,
  isTpsError,
  CLIENT_ERROR_CODES,
  type ClientErrorCode,
  type TpsErrorCode,
} from './errors.js';
export {
  MemoryJournal,
  JOURNAL_PHASES,
  type Journal,
  type JournalEntry,
  type JournalPhase,
} from './journal.js';
export { SqliteJournal } from './sqlite-journal.js';
export { localTrustOf, type LocalTrust } from './local-trust.js';
export { followEvents, eventKindOf, type FollowEventsOptions, type PosEvent } from './events.js';
export { backoffDelay, type BackoffPolicy, type RetryPolicy } from '../common/backoff.js';
export { DEFAULT_BACKOFF, DEFAULT_RETRY, systemTiming, type Timing } from './timing.js';
export type * from './types.js';
