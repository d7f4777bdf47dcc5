/**
 * What makes guessing credentials slow for the guesser without locking the real user out
 * from elsewhere (docs/security.md). Failed sign-ins are counted in fixed windows:
 *
 * - per (username, source): one place guessing one username;
 * - per source: one place guessing across usernames (password spraying);
 * - per username, as a high ceiling: many places guessing one username. A source that
 *   signed in with that username before (within 30 days, in this process) is exempt, so
 *   a distributed guesser cannot shut the real user out of the places it works from.
 *
 * A sign-in over a limit is refused before its secret is checked (a right guess then
 * tells nothing) until that window ends. A success clears its (username, source) count.
 * Sources are IP addresses; IPv6 addresses count per /64, the block one subscriber gets.
 *
 * Slow hashes (the account password's PBKDF2) run at most `maxHashing` at once on libuv's
 * small thread pool: beyond, the caller answers at once that the service is busy rather
 * than queue work without bound behind it (HashGate).
 */
import { isIP } from 'node:net';
import { BoundedMap } from './bounded-map.js';

export interface SignInLimits {
  /** Length of a counting window, ms. */
  windowMs: number;
  perUserSource: number;
  perSource: number;
  /** The ceiling per username; sources it signed in from before are exempt. */
  perUser: number;
}

/** Counters kept per kind: a flood of new keys drops the oldest, never grows memory. */
const KEYS_KEPT = 100_000;
/** How long a source that signed in with a username stays exempt from its ceiling. */
const KNOWN_SOURCE_MS = 30 * 86_400_000;

interface Window {
  start: number;
  failures: number;
}

/** The source of a request for counting: the address, IPv6 per /64. */
export function sourceOf(address: string | undefined): string {
  if (!address) return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return mapped[1]!;
  if (isIP(address) !== 6) return address;
  return `${expandIpv6(address).slice(0, 4).join(':')}::/64`;
}

function expandIpv6(address: string): string[] {
  const [head = '', tail] = address.split('%')[0]!.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const zeros = tail === undefined ? [] : Array(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((group) => group.toLowerCase().replace(/^0+(?=.)/, ''));
}

export class SignInThrottle {
  private readonly pairs = new BoundedMap<string, Window>(KEYS_KEPT);
  private readonly sources = new BoundedMap<string, Window>(KEYS_KEPT);
  private readonly users = new BoundedMap<string, Window>(KEYS_KEPT);
  /** (username, source) pairs that signed in, and when. */
  private readonly known = new BoundedMap<string, number>(KEYS_KEPT);

  constructor(
    private readonly limits: SignInLimits,
    private readonly now: () => number = () => Date.now(),
  ) {}

  /** Seconds to wait, when a limit refuses this sign-in; undefined when it may be checked. */
  check(username: string, source: string): number | undefined {
    const now = this.now();
    const pair = `${username}\u0000${source}`;
    const waits = [
      this.wait(this.pairs.get(pair), this.limits.perUserSource, now),
      this.wait(this.sources.get(source), this.limits.perSource, now),
    ];
    const knownAt = this.known.get(pair);
    if (knownAt === undefined || now - knownAt > KNOWN_SOURCE_MS) {
      waits.push(this.wait(this.users.get(username), this.limits.perUser, now));
    }
    const longest = Math.max(...waits);
    return longest > 0 ? Math.ceil(longest / 1000) : undefined;
  }

  failed(username: string, source: string): void {
    const now = this.now();
    this.count(this.pairs, `${username}\u0000${source}`, now);
    this.count(this.sources, source, now);
    this.count(this.users, username, now);
  }

  succeeded(username: string, source: string): void {
    const pair = `${username}\u0000${source}`;
    this.pairs.delete(pair);
    this.known.set(pair, this.now());
  }

  private wait(window: Window | undefined, limit: number, now: number): number {
    if (!window || window.failures < limit) return 0;
    return Math.max(0, window.start + this.limits.windowMs - now);
  }

  private count(map: BoundedMap<string, Window>, key: string, now: number): void {
    const window = map.get(key);
    if (!window || now - window.start >= this.limits.windowMs) {
      map.set(key, { start: now, failures: 1 });
    } else {
      window.failures++;
    }
  }
}

/** Thrown when every slot for a slow hash is taken. */
export class HashingBusy extends Error {
  constructor() {
    super('every slot for checking a password is taken');
    this.name = 'HashingBusy';
  }
}

/** A semaphore without a queue: at most `max` slow hashes at once, the rest refused. */
export class HashGate {
  private running = 0;

  constructor(private readonly max: number) {}

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.running >= this.max) throw new HashingBusy();
    this.running++;
    try {
      return await work();
    } finally {
      this.running--;
    }
  }
}

/** The limits as configured (TPS_SIGN_IN_*), for one listener. */
export function signInThrottle(config: {
  signInWindowS: number;
  signInFailuresPerUserSource: number;
  signInFailuresPerSource: number;
  signInFailuresPerUser: number;
}): SignInThrottle {
  return new SignInThrottle({
    windowMs: config.signInWindowS * 1000,
    perUserSource: config.signInFailuresPerUserSource,
    perSource: config.signInFailuresPerSource,
    perUser: config.signInFailuresPerUser,
  });
}
