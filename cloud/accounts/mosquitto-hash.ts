/**
 * Agent broker credentials in Mosquitto's own password-hash format, so that one stored
 * hash serves the embedded broker, a Mosquitto password file and an EMQX user import.
 *
 * Mosquitto 2.0's `$7$` hash (mosquitto_passwd's default) is PBKDF2-HMAC-SHA512 over the
 * password's bytes with a 12-byte salt, 64 bytes of output, written as
 * `$7$<iterations>$<base64 salt>$<base64 hash>` (standard base64 with padding); 101
 * iterations is mosquitto_passwd's default. The secret is 24 random bytes: stretching
 * adds nothing against guessing, so the default count is kept, and a check costs ≈ 0.1 ms.
 *
 * Our salt is 12 random characters from [A-Za-z0-9] (71 bits) rather than 12 random
 * bytes: Mosquitto takes any 12 bytes, and printable ones can also be handed to EMQX,
 * whose built-in database uses the salt string as given (see emqxUserRecord).
 */
import { pbkdf2Sync, randomInt, timingSafeEqual } from 'node:crypto';
import { verifySecret } from './secrets.js';

/** mosquitto_passwd's default iteration count. */
export const BROKER_HASH_ITERATIONS = 101;
const SALT_LENGTH = 12;
const HASH_LENGTH = 64;
const SALT_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const SHAPE = /^\$7\$([1-9][0-9]{0,8})\$([A-Za-z0-9+/]+={0,2})\$([A-Za-z0-9+/]+={0,2})$/;

interface ParsedBrokerHash {
  iterations: number;
  salt: Buffer;
  hash: Buffer;
}

function parse(stored: string): ParsedBrokerHash | undefined {
  const match = SHAPE.exec(stored);
  if (!match) return undefined;
  const salt = Buffer.from(match[2]!, 'base64');
  const hash = Buffer.from(match[3]!, 'base64');
  // Mosquitto refuses any other salt length; the hash is a whole SHA-512 output.
  if (salt.length !== SALT_LENGTH || hash.length !== HASH_LENGTH) return undefined;
  return { iterations: Number(match[1]), salt, hash };
}

function derive(secret: string, salt: Buffer, iterations: number): Buffer {
  return pbkdf2Sync(Buffer.from(secret, 'utf8'), salt, iterations, HASH_LENGTH, 'sha512');
}

/** A `$7$` hash of the secret, as `mosquitto_passwd` writes it. */
export function hashForBroker(secret: string): string {
  let salt = '';
  for (let i = 0; i < SALT_LENGTH; i++) salt += SALT_ALPHABET[randomInt(SALT_ALPHABET.length)];
  const saltBytes = Buffer.from(salt, 'ascii');
  const hash = derive(secret, saltBytes, BROKER_HASH_ITERATIONS);
  return `$7$${BROKER_HASH_ITERATIONS}$${saltBytes.toString('base64')}$${hash.toString('base64')}`;
}

/** Whether a stored hash is one Mosquitto reads: `$7$`, 12-byte salt, 64-byte hash. */
export function isBrokerHash(stored: string): boolean {
  return parse(stored) !== undefined;
}

/** Checks a secret against a `$7$` hash in constant time; false for any other shape. */
export function verifyBrokerHash(secret: string, stored: string): boolean {
  const parsed = parse(stored);
  if (!parsed) return false;
  return timingSafeEqual(derive(secret, parsed.salt, parsed.iterations), parsed.hash);
}

/**
 * Checks an agent's secret against its stored hash, whatever its age: `$7$` hashes, and
 * the salted SHA-256 (or earlier scrypt) hashes stored before them.
 */
export async function verifyAgentSecret(secret: string, stored: string): Promise<boolean> {
  if (stored.startsWith('$7$')) return verifyBrokerHash(secret, stored);
  return verifySecret(secret, stored);
}

/**
 * The same credential as a record of EMQX's built-in database (import with type `hash`,
 * authenticator `pbkdf2` / `sha512` / the hash's iterations / `dk_length` 64): EMQX
 * computes PBKDF2 over the salt string's bytes and compares lowercase hex. Undefined when
 * the salt is not printable ASCII (a hash made elsewhere, e.g. by mosquitto_passwd).
 */
export function emqxUserRecord(
  userId: string,
  stored: string,
): { user_id: string; password_hash: string; salt: string; is_superuser: false } | undefined {
  const parsed = parse(stored);
  if (!parsed || parsed.iterations !== BROKER_HASH_ITERATIONS) return undefined;
  if (!parsed.salt.every((byte) => byte >= 0x21 && byte <= 0x7e)) return undefined;
  return {
    user_id: userId,
    password_hash: parsed.hash.toString('hex'),
    salt: parsed.salt.toString('ascii'),
    is_superuser: false,
  };
}
