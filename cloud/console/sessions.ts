/**
 * Console sessions: a signed cookie that names the credential it was opened with, so a
 * session resolves to the same Principal that credential's Basic auth gives, read from the
 * store on every request. No session state is kept: the signing key is one setting in
 * the store, shared by every relay and kept across restarts. A session ends when it
 * expires, when its credential's secret changes or the credential is removed, or (in this
 * process) when it is signed out.
 *
 * State changes are CSRF-safe twice over: the cookie is SameSite=Strict, and a request
 * that authenticates by the cookie must also carry the session's token in a header
 * (CSRF_HEADER), which a page of another origin can neither read nor set.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { BoundedMap } from '../../common/bounded-map.js';
import { ApiError } from '../errors.js';
import { principalOf, type Principal } from '../accounts/principal.js';
import { AccountStandings } from '../accounts/standings.js';
import type { Store } from '../store/store.js';

export const SESSION_COOKIE = 'tps_console';
export const CSRF_HEADER = 'x-tps-csrf';
/** How long a session lasts from sign-in, whatever its use (docs/security.md). */
export const SESSION_TTL_MS = 8 * 3600_000;
const KEY_SETTING = 'console-session-key';
const SIGNED_OUT_KEPT = 10_000;

const SessionClaims = z.object({
  /** The credential's username. */
  u: z.string().min(1).max(255),
  /** Session id, random. */
  s: z.string().min(16).max(64),
  /** Expiry, ms since the epoch. */
  e: z.number().int(),
  /** A digest of the credential's stored secret hash: a changed secret ends the session. */
  f: z.string().min(1).max(64),
});
type SessionClaims = z.infer<typeof SessionClaims>;

export interface ConsoleSession {
  principal: Principal;
  csrfToken: string;
  expiresAt: number;
}

const unauthorized = (description: string) => new ApiError('UNAUTHORIZED', description);

export class ConsoleSessions {
  private readonly signedOut = new BoundedMap<string, number>(SIGNED_OUT_KEPT);

  private constructor(
    private readonly store: Store,
    private readonly key: Buffer,
    private readonly now: () => number,
    private readonly accounts: AccountStandings,
  ) {}

  /**
   * The sessions of this store; relays starting at once agree on one key. `accounts`: the
   * authenticator's, so that a disabled account's sessions end when its sign-ins do.
   */
  static async open(
    store: Store,
    now: () => number = Date.now,
    accounts: AccountStandings = new AccountStandings(store),
  ): Promise<ConsoleSessions> {
    const key = await store.claimSetting(KEY_SETTING, randomBytes(32).toString('base64url'));
    return new ConsoleSessions(store, Buffer.from(key, 'base64url'), now, accounts);
  }

  /** A new session's cookie value for a credential that just signed in. */
  async issue(username: string): Promise<{ cookie: string; session: ConsoleSession }> {
    const credential = await this.store.findCredential(username);
    if (!credential) throw unauthorized('wrong username or password');
    const claims: SessionClaims = {
      u: username,
      s: randomBytes(18).toString('base64url'),
      e: this.now() + SESSION_TTL_MS,
      f: fingerprint(credential.secretHash),
    };
    const payload = Buffer.from(JSON.stringify(claims)).toString('base64url');
    const cookie = `${payload}.${this.sign(payload)}`;
    return { cookie, session: await this.sessionOf(claims, credential) };
  }

  /** The session a cookie value carries; throws UNAUTHORIZED when it is not one any more. */
  async resolve(cookie: string): Promise<ConsoleSession> {
    const [payload = '', signature = ''] = cookie.split('.');
    if (!payload || !safeEqual(signature, this.sign(payload))) {
      throw unauthorized('the console session is not valid; sign in again');
    }
    const parsed = SessionClaims.safeParse(parseJson(Buffer.from(payload, 'base64url')));
    if (!parsed.success) throw unauthorized('the console session is not valid; sign in again');
    const claims = parsed.data;
    if (claims.e <= this.now() || this.signedOut.has(claims.s)) {
      throw unauthorized('the console session has ended; sign in again');
    }
    const credential = await this.store.findCredential(claims.u);
    if (!credential || fingerprint(credential.secretHash) !== claims.f) {
      throw unauthorized('the credential of this session changed; sign in again');
    }
    return await this.sessionOf(claims, credential);
  }

  signOut(cookie: string): void {
    const payload = cookie.split('.')[0] ?? '';
    const claims = SessionClaims.safeParse(parseJson(Buffer.from(payload, 'base64url')));
    if (claims.success) this.signedOut.set(claims.data.s, claims.data.e);
  }

  private async sessionOf(
    claims: SessionClaims,
    credential: { accountId: string; terminalId?: string | undefined },
  ): Promise<ConsoleSession> {
    const account = await this.accounts.of(credential.accountId);
    if (account?.disabledAt) throw unauthorized('this account is disabled');
    return {
      // The same principal Basic auth gives (authenticator.ts), username included.
      principal: principalOf({ ...credential, username: claims.u }, account),
      csrfToken: this.sign(`csrf:${claims.s}`),
      expiresAt: claims.e,
    };
  }

  private sign(text: string): string {
    return createHmac('sha256', this.key).update(text).digest('base64url');
  }
}

/** Whether a request's CSRF header matches its session. */
export function csrfMatches(session: ConsoleSession, header: string | string[] | undefined) {
  return typeof header === 'string' && safeEqual(header, session.csrfToken);
}

function fingerprint(secretHash: string): string {
  return createHash('sha256').update(secretHash).digest('base64url').slice(0, 22);
}

function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

function parseJson(bytes: Buffer): unknown {
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    return undefined;
  }
}
