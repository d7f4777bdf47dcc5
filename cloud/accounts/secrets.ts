/**
 * Secrets are stored as hashes and compared in constant time. A secret a person chose
 * (the account password) gets PBKDF2-HMAC-SHA256 with 600,000 iterations (OWASP's
 * figure), slow on purpose against guessing and, unlike scrypt, without 16 MB of memory
 * per hash that the allocator keeps afterwards. A secret the service generated (24
 * random bytes) cannot be guessed, so a salted SHA-256 is as safe and costs microseconds.
 * A secret verified once is remembered as a keyed digest for the life of the process:
 * later requests cost one HMAC. Hashes made by scrypt earlier still verify. Agents' broker
 * credentials have their own format, Mosquitto's (mosquitto-hash.ts).
 */
import { createHmac, pbkdf2, randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { BoundedMap } from '../../common/bounded-map.js';
import { verifyGeneratedSecret } from '../../common/generated-secret.js';

/** The relay's secrets in one place; generated ones are shared with the agent (common/). */
export { hashGeneratedSecret } from '../../common/generated-secret.js';

const scryptAsync = promisify(scrypt) as (
  password: string,
  salt: Buffer,
  keylen: number,
  options: { N: number; r: number; p: number },
) => Promise<Buffer>;

const pbkdf2Async = promisify(pbkdf2);
const PBKDF2_ITERATIONS = 600_000;
const KEY_LENGTH = 32;

export async function hashSecret(secret: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await pbkdf2Async(secret, salt, PBKDF2_ITERATIONS, KEY_LENGTH, 'sha256');
  return `pbkdf2-sha256$${PBKDF2_ITERATIONS}$${salt.toString('base64')}$${key.toString('base64')}`;
}

export async function verifySecret(secret: string, stored: string): Promise<boolean> {
  if (stored.startsWith('sha256$')) return verifyGeneratedSecret(secret, stored);
  if (stored.startsWith('pbkdf2-sha256$')) {
    const [, iterations, salt, key] = stored.split('$');
    if (!iterations || !salt || !key) return false;
    const expected = Buffer.from(key, 'base64');
    const actual = await pbkdf2Async(
      secret,
      Buffer.from(salt, 'base64'),
      Number(iterations),
      expected.length,
      'sha256',
    );
    return timingSafeEqual(actual, expected);
  }
  const [scheme, n, r, p, salt, key] = stored.split('$');
  if (scheme !== 'scrypt' || !n || !r || !p || !salt || !key) return false;
  const expected = Buffer.from(key, 'base64');
  const actual = await scryptAsync(secret, Buffer.from(salt, 'base64'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
  });
  return timingSafeEqual(actual, expected);
}

/** Whether checking a secret against this stored hash stretches the key (PBKDF2, scrypt). */
export function isSlowHash(stored: string): boolean {
  return stored.startsWith('pbkdf2-sha256$') || stored.startsWith('scrypt$');
}

const CACHE_LIMIT = 10_000;

/** Remembers secrets already verified against a given stored hash. */
export class VerifiedSecretCache {
  private readonly key = randomBytes(32);
  private readonly entries = new BoundedMap<string, { storedHash: string; digest: Buffer }>(
    CACHE_LIMIT,
  );
  /** Verifications under way, so that a burst of requests with a new secret pays one scrypt. */
  private readonly inflight = new Map<string, Promise<boolean>>();

  /** `verifier` checks a secret against a stored hash (agents' hashes: verifyAgentSecret). */
  constructor(
    private readonly verifier: (secret: string, stored: string) => Promise<boolean> = verifySecret,
  ) {}

  /** Forgets what was verified for a username (its credential was revoked or rotated). */
  forget(username: string): void {
    this.entries.delete(username);
  }

  /** Forgets everything verified (revocations may have been missed). */
  clear(): void {
    this.entries.clear();
  }

  private digest(secret: string): Buffer {
    return createHmac('sha256', this.key).update(secret).digest();
  }

  async verify(username: string, secret: string, storedHash: string): Promise<boolean> {
    return (await this.check(username, secret, storedHash)).valid;
  }

  /**
   * Like verify, and says whether the verifier ran (or was awaited) for this check, as
   * opposed to an answer from memory: a caller that wants every failure to cost the
   * same can then add the work that was not done.
   */
  async check(
    username: string,
    secret: string,
    storedHash: string,
  ): Promise<{ valid: boolean; verified: boolean }> {
    const entry = this.entries.get(username);
    if (entry && entry.storedHash === storedHash) {
      return { valid: timingSafeEqual(entry.digest, this.digest(secret)), verified: false };
    }
    const digest = this.digest(secret);
    const key = `${username}\u0000${storedHash}\u0000${digest.toString('hex')}`;
    let verification = this.inflight.get(key);
    if (!verification) {
      verification = this.verifier(secret, storedHash).finally(() => this.inflight.delete(key));
      this.inflight.set(key, verification);
    }
    if (!(await verification)) return { valid: false, verified: true };
    this.entries.set(username, { storedHash, digest });
    return { valid: true, verified: true };
  }
}
