/**
 * Who is asking, as the authenticator found it (docs/tenants.md, "The roles"): the operator
 * runs the relay, an account credential reaches all its account's terminals, a terminal
 * credential only its own terminal.
 */
import type { AccountRecord, CredentialRecord } from '../store/records.js';

export type Role = 'operator' | 'account' | 'terminal';

export interface Principal {
  accountId: string;
  /**
   * The credential's username: what a claim records as its claimer, what the failed-claim
   * limit counts, what cannot revoke itself. Basic auth and a console session give the same.
   */
  username: string;
  terminalId?: string;
  role: Role;
}

/** The principal of a credential of `account` (undefined: made before accounts had kinds). */
export function principalOf(
  credential: Pick<CredentialRecord, 'username' | 'accountId' | 'terminalId'>,
  account: Pick<AccountRecord, 'kind'> | undefined,
): Principal {
  const role: Role = credential.terminalId
    ? 'terminal'
    : account?.kind === 'operator'
      ? 'operator'
      : 'account';
  return {
    username: credential.username,
    accountId: credential.accountId,
    ...(credential.terminalId ? { terminalId: credential.terminalId } : {}),
    role,
  };
}
