/**
 * relay → agent: the verifiers of the terminal's POS credentials, for local mode
 * (docs/local-mode.md, "Credentials and trust"). Always the whole set, with the store's
 * revision of it: the agent keeps the set of the highest revision it received, so an older
 * message delivered again (QoS 1, reordered across reconnects) never brings back a
 * credential revoked since. A terminal without local mode gets the empty set.
 *
 * Only verifiers of generated secrets travel (`sha256$salt$digest`, 192 random bits behind
 * each): never a password, never the account credential (docs/security.md).
 */
import { z } from 'zod';

/** A salted SHA-256 of a generated secret, as the relay stores it (base64 salt and digest). */
export const GeneratedSecretVerifier = z
  .string()
  .regex(/^sha256\$[A-Za-z0-9+/]{22}==\$[A-Za-z0-9+/]{43}=$/, 'must be sha256$<salt>$<digest>');

export const LocalCredential = z.object({
  username: z.string().min(1).max(128),
  verifier: GeneratedSecretVerifier,
});
export type LocalCredential = z.infer<typeof LocalCredential>;

export const LocalCredentialsMessage = z.object({
  /** Grows with every change of the terminal's POS credentials (never goes back). */
  revision: z.int().min(0),
  /** At most 100: a terminal has a handful of POS credentials. */
  credentials: z.array(LocalCredential).max(100),
});
export type LocalCredentialsMessage = z.infer<typeof LocalCredentialsMessage>;
