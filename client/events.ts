/**
 * Follows `POST /event/list` as an async iterator: the first call sends the filter, each
 * later one the `next_token` of the answer before (the token carries the filter), with
 * `wait_seconds` > 0 so the service holds the request until an event exists. Failures
 * that can pass (network, time-out, 5xx) are repeated with back-off from the same
 * token, so no event is skipped; aborting the signal ends the iteration quietly.
 *
 * Event types carry a vendor part the service configures
 * (`eu.<vendor>.api.pos.v0.Transaction`): kinds are recognised by their suffix, and
 * types the client does not know are skipped, as new ones may appear at any time.
 */
import type { Revision } from '../protocol/index.js';
import type { ApiClient, RawCloudEvent } from './api-client.js';
import { Backoff, type BackoffPolicy } from '../common/backoff.js';
import { toTpsError, type TpsError } from './errors.js';
import { DEFAULT_BACKOFF, systemTiming, type Timing } from './timing.js';
import type { TerminalStatusOf, TransactionOf } from './types.js';

export const EVENT_KINDS = ['Transaction', 'TerminalStatus'] as const;
export type EventKindName = (typeof EVENT_KINDS)[number];

interface PosEventBase {
  event: RawCloudEvent;
  /** The token after the page that carried this event: resuming from it continues after that page. */
  nextToken: string;
}
export type PosEvent<R extends Revision = 'v1'> =
  | (PosEventBase & { kind: 'Transaction'; transaction: TransactionOf<R> })
  | (PosEventBase & { kind: 'TerminalStatus'; status: TerminalStatusOf<R> });

export interface FollowEventsOptions {
  /** A terminal id (or a cohort id); default: every terminal the credential reaches. */
  subject?: string;
  /**
   * `Transaction` or `TerminalStatus` (matched on the suffix, whatever the vendor part),
   * or a full type name, which is also sent to the service as the filter.
   */
  type?: string;
  /** Events per page (the service's default when absent). */
  limit?: number;
  /** Long-poll wait per page (default 25; 0 polls without waiting). */
  waitSeconds?: number;
  /** Keep following (default); false ends at the first empty page. */
  follow?: boolean;
  /** Resume from a token an earlier iteration handed out. */
  nextToken?: string;
  signal?: AbortSignal;
  backoff?: Partial<BackoffPolicy>;
  timing?: Timing;
  /** Told of every failed page request that will be repeated. */
  onRetry?: (error: TpsError, delayMs: number) => void;
}

/** The kind of an event type, by its suffix; undefined for a type this client does not know. */
export function eventKindOf(type: string): EventKindName | undefined {
  return EVENT_KINDS.find((kind) => type.endsWith(`.${kind}`));
}

export async function* followEvents<R extends Revision>(
  api: ApiClient<R>,
  options: FollowEventsOptions = {},
): AsyncGenerator<PosEvent<R>, void, undefined> {
  const { signal } = options;
  const timing = options.timing ?? systemTiming;
  const backoff = new Backoff({ ...DEFAULT_BACKOFF, ...options.backoff, random: timing.random });
  const wanted =
    options.type === undefined
      ? undefined
      : (EVENT_KINDS.find((kind) => kind === options.type) ?? eventKindOf(options.type));
  const exactType = options.type?.includes('.') ? options.type : undefined;
  const filter = {
    ...(options.subject !== undefined ? { subject: { eq: options.subject } } : {}),
    ...(exactType !== undefined ? { type: { eq: exactType } } : {}),
  };
  const page = {
    ...(options.limit !== undefined ? { limit: options.limit } : {}),
    wait_seconds: options.waitSeconds ?? 25,
  };
  let token = options.nextToken;
  for (;;) {
    if (signal?.aborted) return;
    let answer;
    try {
      answer = await api.listEvents(
        token !== undefined
          ? { next_token: token, ...page }
          : { ...(Object.keys(filter).length > 0 ? { filter } : {}), ...page },
        { ...(signal ? { signal } : {}), retry: false },
      );
    } catch (error) {
      if (signal?.aborted) return;
      const failure = toTpsError(error, '/event/list');
      if (!failure.retryable) throw failure;
      const delayMs = backoff.next(failure.retryAfterMs);
      options.onRetry?.(failure, delayMs);
      await timing.sleep(delayMs, signal);
      continue;
    }
    backoff.reset();
    token = answer.next_token;
    for (const raw of answer.events) {
      const event = interpret<R>(raw, token);
      if (!event) continue;
      if (options.type !== undefined && event.kind !== wanted) continue;
      if (exactType !== undefined && raw.type !== exactType) continue;
      yield event;
    }
    if (options.follow === false && answer.events.length === 0) return;
  }
}

function interpret<R extends Revision>(
  raw: RawCloudEvent,
  nextToken: string,
): PosEvent<R> | undefined {
  const kind = eventKindOf(raw.type);
  if (kind === undefined || typeof raw.data !== 'object' || raw.data === null) return undefined;
  return kind === 'Transaction'
    ? { kind, transaction: raw.data as TransactionOf<R>, event: raw, nextToken }
    : { kind, status: raw.data as TerminalStatusOf<R>, event: raw, nextToken };
}
