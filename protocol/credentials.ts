/**
 * Adding, revoking and rotating credentials: an account credential names one of its
 * account's credentials, an API one (account or terminal, by username) or a terminal
 * agent's broker credential (its username is the terminal id); the operator names the
 * account too (`account_id`).
 */
import { z } from 'zod';
import { AccountId } from './accounts.js';

export const CREDENTIAL_TYPES = ['API', 'AGENT'] as const;

export const CredentialRequest = z.object({
  /** `API` (default): an HTTP credential; `AGENT`: a terminal agent's broker credential. */
  type: z.enum(CREDENTIAL_TYPES).optional(),
  username: z.string().min(1).max(128),
  /** The account acted for: the operator names one; an account's own credential may name itself. */
  account_id: AccountId.optional(),
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

export const AccountCredentialAddRequest = z.strictObject({
  /** The account acted for: the operator names one; an account's own credential may name itself. */
  account_id: AccountId.optional(),
});
export type AccountCredentialAddRequest = z.infer<typeof AccountCredentialAddRequest>;

export const AccountCredentialAddResponse = z.object({
  /** A new account credential of the account, its password shown this once. */
  credential: z.object({ account_id: z.string(), username: z.string(), password: z.string() }),
});
export type AccountCredentialAddResponse = z.infer<typeof AccountCredentialAddResponse>;
