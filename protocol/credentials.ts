/**
 * Revoking and rotating credentials: an account credential names one of its account's
 * credentials, an API one (account or terminal, by username) or a terminal agent's broker
 * credential (its username is the terminal id).
 */
import { z } from 'zod';

export const CREDENTIAL_TYPES = ['API', 'AGENT'] as const;

export const CredentialRequest = z.object({
  /** `API` (default): an HTTP credential; `AGENT`: a terminal agent's broker credential. */
  type: z.enum(CREDENTIAL_TYPES).optional(),
  username: z.string().min(1).max(128),
});
export type CredentialRequest = z.infer<typeof CredentialRequest>;

export const CredentialView = z.object({
  type: z.enum(CREDENTIAL_TYPES),
  username: z.string(),
  /** The terminal a terminal or agent credential reaches; none for an account credential. */
  terminal_id: z.string().optional(),
});
export type CredentialView = z.infer<typeof CredentialView>;

export const CredentialRevokeResponse = z.object({
  credential: CredentialView.extend({ revoked: z.literal(true) }),
});
export type CredentialRevokeResponse = z.infer<typeof CredentialRevokeResponse>;

export const CredentialRotateResponse = z.object({
  /** The new secret, shown this once; the old one no longer signs in. */
  credential: CredentialView.extend({ password: z.string() }),
});
export type CredentialRotateResponse = z.infer<typeof CredentialRotateResponse>;
