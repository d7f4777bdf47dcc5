/**
 * Parking a long poll: a request that waits for something to happen, for at most its
 * `wait_seconds`, and answers at once when its client goes away or the relay closes. What
 * it waits on is the caller's (a transaction's change feed, the event feed); the rules of
 * parking are here, once: it answers exactly once, and every way out lets go of the timer,
 * the cancellation listeners and the caller's subscription, so nothing parked outlives
 * its request.
 */
import type { Cancellation } from './cancellation.js';
import { systemTimers, type Timers } from '../common/clock.js';
import type { Principal } from './accounts/principal.js';
import { ApiError } from './errors.js';

/** A parked poll, as its watcher sees it. */
export interface Parked<T> {
  /** Answers `value` now; later calls, and the time running out, are ignored. */
  settle(value: T): void;
  /** Fails the poll with `error` (a read that failed), unless it has answered. */
  fail(error: unknown): void;
  /** Whether the poll has answered: work begun for it may stop. */
  readonly settled: boolean;
}

export interface LongPollOptions<T> {
  /** The longest wait; 0 or less answers `otherwise()` at once. */
  waitMs: number;
  /** The answer when the time runs out, the client goes away or the relay closes. */
  otherwise: () => T;
  /** Each one ends the wait early: the client's going away, the relay's closing. */
  cancelledBy: ReadonlyArray<Pick<Cancellation, 'cancelled' | 'add' | 'remove'>>;
  timers?: Timers;
  /**
   * Counts the wait against its holder's cap while it is parked. Beyond the cap the poll
   * is refused (429), or with `answerWhenFull` answers `otherwise()` at once: a wait that
   * follows a change the request made answers that change rather than refuse it.
   */
  parkedAs?: { holder: string; waits: ParkedWaits; answerWhenFull?: boolean };
}

/** Parked waits per holder (a credential) allowed by default (docs/security.md). */
export const DEFAULT_MAX_PARKED_PER_CREDENTIAL = 100;

/**
 * Whose waits a principal's count against: an account credential's, or one terminal's
 * credential's. Several account credentials of one account share the account's count.
 */
export function parkingHolder(principal: Principal): string {
  return principal.terminalId === undefined
    ? principal.accountId
    : `${principal.accountId}/${principal.terminalId}`;
}

/**
 * The waits each holder has parked, capped: every parked wait holds a socket, a timer and
 * a subscription for up to 180 s, so one credential must not hold them without bound.
 * With `maxPerAccount`, all the holders of one account (its account credentials and each
 * of its terminals', `acct-…/t-…`) are capped together too, so one merchant with many
 * terminals cannot take what the relay has for the others (docs/tenants.md). Beyond a cap
 * a wait is refused 429 TOO_MANY_REQUESTS before it parks.
 */
export class ParkedWaits {
  private readonly parked = new Map<string, number>();
  private readonly perAccount = new Map<string, number>();

  constructor(
    readonly maxPerHolder = DEFAULT_MAX_PARKED_PER_CREDENTIAL,
    /** Who a holder is, in the refusal: a credential, or a client's address. */
    private readonly holderIs = 'this credential',
    readonly maxPerAccount = Number.POSITIVE_INFINITY,
  ) {}

  /** Waits `holder` has parked now. */
  count(holder: string): number {
    return this.parked.get(holder) ?? 0;
  }

  /** Waits all the holders of `holder`'s account have parked now. */
  accountCount(holder: string): number {
    return this.perAccount.get(accountOf(holder)) ?? 0;
  }

  /** Throws 429 TOO_MANY_REQUESTS, with Retry-After, when `holder` has no wait left. */
  check(holder: string): void {
    const count = this.count(holder);
    const refuse = (what: string, n: number) => {
      throw new ApiError(
        'TOO_MANY_REQUESTS',
        `${what} already has ${n} requests waiting; answer them or wait less`,
        { 'Retry-After': '1' },
      );
    };
    if (count >= this.maxPerHolder) refuse(this.holderIs, count);
    const ofAccount = this.accountCount(holder);
    if (ofAccount >= this.maxPerAccount) refuse("this credential's account", ofAccount);
  }

  /** Counts one more wait for `holder`, or throws 429. */
  take(holder: string): void {
    this.check(holder);
    this.parked.set(holder, this.count(holder) + 1);
    this.perAccount.set(accountOf(holder), this.accountCount(holder) + 1);
  }

  /** Lets go of one wait `holder` took. */
  release(holder: string): void {
    const left = this.count(holder) - 1;
    if (left > 0) this.parked.set(holder, left);
    else this.parked.delete(holder);
    const leftOfAccount = this.accountCount(holder) - 1;
    if (leftOfAccount > 0) this.perAccount.set(accountOf(holder), leftOfAccount);
    else this.perAccount.delete(accountOf(holder));
  }
}

/** The account part of a holder (parkingHolder): `acct-…`, or the whole of another holder. */
const accountOf = (holder: string) => holder.split('/', 1)[0]!;

/**
 * Parks until `watch` settles the poll, the time runs out or a cancellation ends it.
 * `watch` subscribes to what the poll waits on and answers how to unsubscribe; it should
 * read once more after subscribing, since a change may have committed between the
 * caller's first read and the subscription. It is not called when the poll answers at once.
 */
export function longPoll<T>(
  options: LongPollOptions<T>,
  watch: (parked: Parked<T>) => () => void,
): Promise<T> {
  const { waitMs, otherwise, cancelledBy, timers = systemTimers, parkedAs } = options;
  if (waitMs <= 0 || cancelledBy.some((c) => c.cancelled)) return Promise.resolve(otherwise());
  try {
    parkedAs?.waits.take(parkedAs.holder);
  } catch (error) {
    return parkedAs?.answerWhenFull ? Promise.resolve(otherwise()) : Promise.reject(error);
  }
  return new Promise<T>((resolve, reject) => {
    const parked = new ParkedPoll(options, timers, resolve, reject);
    parked.listen(watch(parked));
  });
}

/**
 * One parked poll's state in one object, its ways out as methods: with 10,000 parked,
 * a closure and a scope for each piece of state cost about a kilobyte a poll.
 */
class ParkedPoll<T> implements Parked<T> {
  settled = false;
  private readonly timer: unknown;
  private unsubscribe: (() => void) | undefined;
  /** One listener for every cancellation, added and removed as itself. */
  private readonly cancelled = () => this.settle(this.options.otherwise());

  constructor(
    private readonly options: LongPollOptions<T>,
    private readonly timers: Timers,
    private readonly resolve: (value: T) => void,
    private readonly reject: (error: unknown) => void,
  ) {
    this.timer = timers.setTimeout(this.cancelled, options.waitMs);
    for (const cancellation of options.cancelledBy) cancellation.add(this.cancelled);
  }

  /** Holds the watcher's unsubscribe, or calls it if the watcher settled already. */
  listen(unsubscribe: () => void): void {
    if (this.settled) unsubscribe();
    else this.unsubscribe = unsubscribe;
  }

  settle(value: T): void {
    if (this.settled) return;
    this.end();
    this.resolve(value);
  }

  fail(error: unknown): void {
    if (this.settled) return;
    this.end();
    this.reject(error);
  }

  private end(): void {
    this.settled = true;
    const { parkedAs, cancelledBy } = this.options;
    parkedAs?.waits.release(parkedAs.holder);
    this.timers.clearTimeout(this.timer);
    for (const cancellation of cancelledBy) cancellation.remove(this.cancelled);
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }
}
