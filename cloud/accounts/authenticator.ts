/** HTTP Basic authentication against the stored credentials. */
import { BoundedMap } from '../bounded-map.js';
import { ApiError } from '../errors.js';
import type { CredentialRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import type { Principal } from '../transactions/service.js';
import { VerifiedSecretCache, hashSecret, verifySecret } from './secrets.js';

const CHALLENGE = { 'WWW-Authenticate': 'Basic realm="terminal-payment-service", charset="UTF-8"' };

const unauthorized = (description: string) => new ApiError('UNAUTHORIZED', description, CHALLENGE);

/**
 * How long a credential read from the store is used before it is read again. A password
 * changed elsewhere (another relay restarted with a new TPS_ACCOUNT_PASSWORD) takes
 * effect here within this time; meanwhile every request skips a store read.
 */
export const CREDENTIAL_TTL_MS = 10_000;
const CREDENTIALS_KEPT = 10_000;

export class Authenticator {
  private readonly cache = new VerifiedSecretCache();
  /** Compared against for unknown usernames, so that a miss costs as long as a hit. */
  private readonly decoy = hashSecret('decoy-secret-never-issued');

  private readonly credentials = new BoundedMap<
    string,
    { record: CredentialRecord; readAt: number }
  >(CREDENTIALS_KEPT);

  constructor(
    private readonly store: Store,
    private readonly now: () => number = () => performance.now(),
  ) {}

  private async credential(username: string): Promise<CredentialRecord | undefined> {
    const now = this.now();
    const known = this.credentials.get(username);
    if (known && now - known.readAt < CREDENTIAL_TTL_MS) return known.record;
    const record = await this.store.findCredential(username);
    if (record) this.credentials.set(username, { record, readAt: now });
    else this.credentials.delete(username);
    return record;
  }

  async authenticate(header: string | undefined): Promise<Principal> {
    if (!header) throw unauthorized('missing Authorization header (HTTP Basic)');
    const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header);
    if (!match?.[1]) throw unauthorized('Authorization must be HTTP Basic');
    const decoded = Buffer.from(match[1], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 1) throw unauthorized('malformed Basic credentials');
    const username = decoded.slice(0, colon);
    const secret = decoded.slice(colon + 1);
    const credential = await this.credential(username);
    if (!credential) {
      await verifySecret(secret, await this.decoy);
      throw unauthorized('wrong username or password');
    }
    if (!(await this.cache.verify(username, secret, credential.secretHash))) {
      throw unauthorized('wrong username or password');
    }
    return {
      accountId: credential.accountId,
      ...(credential.terminalId ? { terminalId: credential.terminalId } : {}),
    };
  }
}
