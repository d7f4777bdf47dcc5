/**
 * The operator's operations on merchant accounts (docs/tenants.md): documented extensions
 * of the API, for an operator credential alone.
 */
import { z } from 'zod';
import { PrintableAscii } from './fields.js';

/** `acct-` and a lowercase ULID (cloud/ids.ts), or an older store's own id. */
export const AccountId = z
  .string()
  .min(1)
  .max(64)
  .regex(/^acct-[0-9a-z-]{1,59}$/, 'must be an account id (acct-…)');

export const AccountCreateRequest = z.strictObject({
  /** What people call the merchant: shown in lists and the console. */
  name: PrintableAscii(64),
});
export type AccountCreateRequest = z.infer<typeof AccountCreateRequest>;

export const AccountIdRequest = z.strictObject({ account_id: AccountId });
export type AccountIdRequest = z.infer<typeof AccountIdRequest>;

export const AccountView = z.object({
  account_id: z.string(),
  kind: z.enum(['merchant', 'operator']),
  name: z.string().optional(),
  created_at: z.string(),
  /** When it was disabled: its credentials are refused everywhere until it is enabled. */
  disabled_at: z.string().optional(),
});
export type AccountView = z.infer<typeof AccountView>;

export const AccountResponse = z.object({ account: AccountView });
export type AccountResponse = z.infer<typeof AccountResponse>;

export const AccountCreateResponse = z.object({
  account: AccountView,
  /** The merchant's account credential, shown this once. */
  credential: z.object({ username: z.string(), password: z.string() }),
});
export type AccountCreateResponse = z.infer<typeof AccountCreateResponse>;

export const AccountListResponse = z.object({ accounts: z.array(AccountView) });
export type AccountListResponse = z.infer<typeof AccountListResponse>;
