/**
 * How the local API (docs/local-mode.md) checks a POS: HTTP Basic against the verifiers
 * of this terminal's POS credentials, with failed sign-ins throttled per address and per
 * username as the relay does (common/sign-in-throttle.ts, the relay's default limits).
 * Only this terminal's POS credentials sign in: the account credential is never here.
 */
import { parseBasicAuthorization } from '../../common/basic-auth.js';
import { hashGeneratedSecret, verifyGeneratedSecret } from '../../common/generated-secret.js';
import { SignInThrottle, sourceOf, type SignInLimits } from '../../common/sign-in-throttle.js';
import type { LocalCredentials } from './credentials.js';

export type LocalApiSignIn =
  { ok: true; username: string } | { ok: false; status: 401 | 429; retryAfterSeconds?: number };

export interface LocalApiAuthenticator {
  check(authorization: string | undefined, remoteAddress: string): Promise<LocalApiSignIn>;
}

/** The relay's defaults (TPS_SIGN_IN_*, docs/configuration.md). */
export const LOCAL_SIGN_IN_LIMITS: SignInLimits = {
  windowMs: 900_000,
  perUserSource: 10,
  perSource: 30,
  perUser: 100,
};

export class VerifierAuthenticator implements LocalApiAuthenticator {
  private readonly throttle: SignInThrottle;
  /** Checked for an unknown username, so that a miss costs what a hit does. */
  private readonly decoy = hashGeneratedSecret('decoy-secret-never-issued');

  constructor(
    private readonly credentials: Pick<LocalCredentials, 'verifier'>,
    options: { limits?: SignInLimits; now?: () => number } = {},
  ) {
    this.throttle = new SignInThrottle(options.limits ?? LOCAL_SIGN_IN_LIMITS, options.now);
  }

  async check(authorization: string | undefined, remoteAddress: string): Promise<LocalApiSignIn> {
    const basic = parseBasicAuthorization(authorization);
    if (!basic.ok) return { ok: false, status: 401 };
    const { username, secret } = basic;
    const source = sourceOf(remoteAddress);
    const wait = this.throttle.check(username, source);
    if (wait !== undefined) return { ok: false, status: 429, retryAfterSeconds: wait };
    const verifier = this.credentials.verifier(username);
    const valid = verifyGeneratedSecret(secret, verifier ?? this.decoy) && verifier !== undefined;
    if (valid) {
      this.throttle.succeeded(username, source);
      return { ok: true, username };
    }
    this.throttle.failed(username, source);
    return { ok: false, status: 401 };
  }
}
