/**
 * HTTP Basic authentication against the stored credentials, with guessing throttled
 * (common/sign-in-throttle.ts): a sign-in over a limit answers 429 with Retry-After before its
 * secret is checked, and a slow hash beyond the gate's slots answers 503 at once.
 *
 * Every failed sign-in costs one full key stretching whatever the username: an unknown
 * one is checked against a decoy hash, and a known one whose check was answered from
 * memory (one HMAC) or by a fast hash (a generated secret's SHA-256) pays the decoy's
 * PBKDF2 too. So an answer's time tells whether the secret was right, never whether the
 * username exists, and each guess costs the guesser as much as the relay.
 */
import { parseBasicAuthorization } from '../../common/basic-auth.js';
import { BoundedMap } from '../../common/bounded-map.js';
import { ApiError } from '../errors.js';
import type { CredentialRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import { principalOf, type Principal } from './principal.js';
import { AccountStandings } from './standings.js';
import { VerifiedSecretCache, hashSecret, isSlowHash, verifySecret } from './secrets.js';
import { HashGate, HashingBusy, type SignInThrottle } from '../../common/sign-in-throttle.js';

const CHALLENGE = { 'WWW-Authenticate': 'Basic realm="terminal-payment-service", charset="UTF-8"' };

const unauthorized = (description: string) => new ApiError('UNAUTHORIZED', description, CHALLENGE);

/**
 * How long a credential read from the store is used before it is read again. A password
 * changed elsewhere (another relay restarted with a new TPS_ACCOUNT_PASSWORD) takes
 * effect here within this time; meanwhile every request skips a store read.
 */
export const CREDENTIAL_TTL_MS = 10_000;
const CREDENTIALS_KEPT = 10_000;

/** Why a sign-in failed, for the metrics. */
export type SignInFailure = 'wrong_credential' | 'throttled' | 'busy';

export interface AuthenticatorOptions {
  /** Failed sign-ins per username and source; none: no limit (unit tests). */
  throttle?: SignInThrottle;
  /** Slow hashes at once (default 2). */
  maxHashing?: number;
  onFailure?: (outcome: SignInFailure) => void;
}

export class Authenticator {
  /** Whose each credential is, and whether that account is disabled. */
  readonly accounts: AccountStandings;
  private readonly gate: HashGate;
  private readonly cache: VerifiedSecretCache;
  /** Compared against for unknown usernames, so that a miss costs as long as a hit. */
  private readonly decoy = hashSecret('decoy-secret-never-issued');

  private readonly credentials = new BoundedMap<
    string,
    { record: CredentialRecord; readAt: number }
  >(CREDENTIALS_KEPT);

  constructor(
    private readonly store: Store,
    private readonly now: () => number = () => performance.now(),
    private readonly options: AuthenticatorOptions = {},
  ) {
    this.gate = new HashGate(options.maxHashing ?? 2);
    this.accounts = new AccountStandings(store, now);
    this.cache = new VerifiedSecretCache((secret, stored) =>
      isSlowHash(stored)
        ? this.gate.run(() => verifySecret(secret, stored))
        : verifySecret(secret, stored),
    );
  }

  /**
   * Forgets a credential read or verified here, so its next use reads the store: after a
   * revocation or rotation, on this relay or (through the change bus) another.
   */
  forget(username: string): void {
    this.credentials.delete(username);
    this.cache.forget(username);
  }

  /** Forgets every credential read or verified (change notices may have been missed). */
  forgetAll(): void {
    this.credentials.clear();
    this.cache.clear();
    this.accounts.forgetAll();
  }

  private async credential(username: string): Promise<CredentialRecord | undefined> {
    const now = this.now();
    const known = this.credentials.get(username);
    if (known && now - known.readAt < CREDENTIAL_TTL_MS) return known.record;
    const record = await this.store.findCredential(username);
    if (record) this.credentials.set(username, { record, readAt: now });
    else this.credentials.delete(username);
    return record;
  }

  /** `source`: the client's address (sign-in-throttle.ts sourceOf). */
  async authenticate(header: string | undefined, source = 'unknown'): Promise<Principal> {
    const basic = parseBasicAuthorization(header);
    if (!basic.ok) throw unauthorized(basic.reason);
    const { username, secret } = basic;

    const { throttle, onFailure } = this.options;
    const wait = throttle?.check(username, source);
    if (wait !== undefined) {
      onFailure?.('throttled');
      throw new ApiError(
        'TOO_MANY_REQUESTS',
        `too many failed sign-ins for this username or from this address; retry after ${wait} s`,
        { 'Retry-After': String(wait) },
      );
    }
    try {
      const credential = await this.credential(username);
      const outcome = credential
        ? await this.cache.check(username, secret, credential.secretHash)
        : { valid: false, verified: false };
      if (outcome.valid) {
        throttle?.succeeded(username, source);
        const account = await this.accounts.of(credential!.accountId);
        // The right secret of a disabled account: refused, but no guess to count.
        if (account?.disabledAt) throw unauthorized('this account is disabled');
        return principalOf(credential!, account);
      }
      if (!(outcome.verified && isSlowHash(credential!.secretHash))) {
        const decoy = await this.decoy;
        await this.gate.run(() => verifySecret(secret, decoy));
      }
    } catch (error) {
      if (!(error instanceof HashingBusy)) throw error;
      onFailure?.('busy');
      throw new ApiError('SERVICE_BUSY', 'too many sign-ins being checked at once; retry soon', {
        'Retry-After': '1',
      });
    }
    throttle?.failed(username, source);
    onFailure?.('wrong_credential');
    throw unauthorized('wrong username or password');
  }
}
