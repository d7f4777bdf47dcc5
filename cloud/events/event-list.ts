/**
 * Reading the event log: `/event/list` with filters, tamper-proof position tokens and
 * long polling parked on the event feed (no polling of the store).
 */
import {
  EVENT_KINDS,
  EVENT_LIST_DEFAULT_LIMIT,
  eventType,
  renderTerminalStatus,
  renderTransaction,
  type EventFilter,
  type EventKind,
  type EventListRequest,
  type Revision,
  type TerminalStatus,
  type Transaction,
} from '../../protocol/index.js';
import { Cancellation } from '../cancellation.js';
import { ApiError } from '../errors.js';
import { cohortOf } from '../ids.js';
import { longPoll, parkingHolder, type ParkedWaits } from '../long-poll.js';
import type { EventQuery, EventRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import type { Timers } from '../../common/clock.js';
import type { Principal } from '../accounts/principal.js';
import type { Cursor, CursorTokens } from './cursor-token.js';
import type { EventFeed, EventNotice } from './event-feed.js';

export interface EventListOptions {
  store: Store;
  feed: EventFeed;
  tokens: CursorTokens;
  /** The vendor part of event type names: `eu.<vendor>.api.pos.v0.Transaction`. */
  vendor: string;
  /** The API base address without the version segment (known once listening). */
  source: () => string;
  /** What parked readers time out on (default: the system's). */
  timers?: Timers;
  /** Caps the waits each credential has parked (default: no cap). */
  parkedWaits?: ParkedWaits;
}

/** Which events a reader sees: its account, maybe one terminal, maybe one kind. */
interface Scope {
  accountId: string;
  subject?: string;
  kind?: EventKind | null;
}

export class EventLog {
  /** Cancelled at shutdown: parked readers answer at once. */
  private readonly closing = new Cancellation();

  constructor(private readonly options: EventListOptions) {}

  stop(): void {
    this.closing.cancel();
  }

  typeOf(kind: EventKind): string {
    return eventType(this.options.vendor, kind);
  }

  /** The kind a type filter names; null for a type this service never writes. */
  kindOf(type: string): EventKind | null {
    return EVENT_KINDS.find((kind) => this.typeOf(kind) === type) ?? null;
  }

  render(event: EventRecord, revision: Revision) {
    return {
      id: event.id,
      source: this.options.source(),
      specversion: '1.0' as const,
      type: this.typeOf(event.kind),
      time: event.time,
      subject: event.subject,
      data:
        event.kind === 'Transaction'
          ? renderTransaction(event.data as Transaction, revision)
          : event.kind === 'TerminalPaired' || event.kind === 'TerminalSettlement'
            ? event.data
            : renderTerminalStatus(event.data as TerminalStatus, revision),
    };
  }

  /** Checks that a filter names only what the principal reaches, and narrows it to that. */
  async scope(principal: Principal, filter: EventFilter | undefined): Promise<Scope> {
    const scope: Scope = { accountId: principal.accountId };
    const subject = filter?.subject?.eq;
    if (filter?.type) scope.kind = this.kindOf(filter.type.eq);
    const unreachable = new ApiError('TERMINAL_NOT_FOUND', `no terminal or cohort ${subject}`);
    if (subject === undefined) {
      if (principal.terminalId) scope.subject = principal.terminalId;
      return scope;
    }
    if (subject === cohortOf(principal.accountId)) {
      if (principal.terminalId) throw unreachable;
      return scope;
    }
    if (principal.terminalId !== undefined && principal.terminalId !== subject) throw unreachable;
    const terminal = await this.options.store.getTerminal(subject);
    if (!terminal || terminal.accountId !== principal.accountId) throw unreachable;
    scope.subject = subject;
    return scope;
  }

  async list(
    principal: Principal,
    revision: Revision,
    request: EventListRequest,
    waitMs: number,
    gone: Cancellation,
  ) {
    const { store, tokens } = this.options;
    const bounds = await store.eventBounds();
    let cursor: Cursor;
    if (request.next_token) {
      cursor = tokens.decode(request.next_token, principal.accountId);
      if (cursor.p < bounds.trimmedThrough) {
        throw new ApiError(
          'EVENTS_EXPIRED',
          `events after position ${cursor.p} are no longer kept (retention deleted through ${bounds.trimmedThrough})`,
        );
      }
    } else {
      const filter = request.filter;
      cursor = {
        // A filtered read starts at the oldest event kept; an unfiltered one at the present.
        p: filter ? bounds.trimmedThrough : bounds.latest,
        a: principal.accountId,
        ...(filter?.subject ? { s: filter.subject.eq } : {}),
        ...(filter?.type ? { y: filter.type.eq } : {}),
      };
    }
    const scope = await this.scope(principal, {
      ...(cursor.s ? { subject: { eq: cursor.s } } : {}),
      ...(cursor.y ? { type: { eq: cursor.y } } : {}),
    });
    const query: EventQuery = {
      ...scope,
      after: cursor.p,
      limit: request.limit ?? EVENT_LIST_DEFAULT_LIMIT,
    };
    let events = await store.readEvents(query);
    if (events.length === 0 && waitMs > 0 && scope.kind !== null) {
      events = await this.waitForEvents(query, waitMs, gone, parkingHolder(principal));
    }
    const last = events.at(-1);
    return {
      events: events.map((event) => this.render(event, revision)),
      next_token: tokens.encode({ ...cursor, p: last ? last.position : cursor.p }),
    };
  }

  /** Parks until an event of the scope is committed, the time runs out or the client leaves. */
  private waitForEvents(query: EventQuery, waitMs: number, gone: Cancellation, holder: string) {
    const { store, feed, timers, parkedWaits } = this.options;
    const matches = (notice: EventNotice) =>
      (query.subject === undefined || notice.subject === query.subject) &&
      (query.kind === undefined || notice.kind === query.kind);
    const parking = {
      waitMs,
      otherwise: (): EventRecord[] => [],
      cancelledBy: [gone, this.closing],
      timers,
      ...(parkedWaits ? { parkedAs: { holder, waits: parkedWaits } } : {}),
    };
    return longPoll(parking, (parked) => {
      let reading = false;
      let readAgain = false;
      const read = (): void => {
        if (parked.settled) return;
        // A notice during a read may describe a commit that read did not see: read again.
        if (reading) {
          readAgain = true;
          return;
        }
        reading = true;
        store.readEvents(query).then(
          (events) => {
            reading = false;
            if (events.length > 0) parked.settle(events);
            else if (readAgain) {
              readAgain = false;
              read();
            }
          },
          (error: unknown) => parked.fail(error),
        );
      };
      const unsubscribe = feed.subscribe(query.accountId, (notice) => {
        if (!notice || matches(notice)) read();
      });
      // An event may have been committed between the first read and the subscription.
      read();
      return unsubscribe;
    });
  }
}
