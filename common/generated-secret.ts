/**
 * Verifiers of secrets the service generated (24 random bytes): a salted SHA-256,
 * `sha256$<salt>$<digest>` in base64. 192 random bits cannot be guessed, offline either,
 * so no key stretching is needed (docs/security.md). The relay stores POS credentials
 * this way; the agent checks its terminal's with the same function in local mode.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export function hashGeneratedSecret(secret: string): string {
  const salt = randomBytes(16);
  const digest = createHash('sha256').update(salt).update(secret).digest();
  return `sha256$${salt.toString('base64')}$${digest.toString('base64')}`;
}

/** Whether `secret` matches a `sha256$` verifier, compared in constant time. */
export function verifyGeneratedSecret(secret: string, stored: string): boolean {
  const [scheme, salt, digest, extra] = stored.split('$');
  if (scheme !== 'sha256' || !salt || !digest || extra !== undefined) return false;
  const expected = Buffer.from(digest, 'base64');
  const actual = createHash('sha256').update(Buffer.from(salt, 'base64')).update(secret).digest();
  return expected.length === actual.length && timingSafeEqual(actual, expected);
}
