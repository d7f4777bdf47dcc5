/**
 * Which role may call which operation (docs/tenants.md, "Who may do what"), checked once
 * a request is authenticated, before its body is read. What a role may do within an
 * operation (its own account, its own terminal) the operation checks itself.
 */
import type { OperationPath } from '../../protocol/index.js';
import { ApiError } from '../errors.js';
import type { Principal, Role } from './principal.js';

/** The operator's operations; no other role calls them. */
const OPERATOR_OPERATIONS: ReadonlySet<string> = new Set<OperationPath>([
  '/account/create',
  '/account/list',
  '/account/get',
  '/account/disable',
  '/account/enable',
  '/fleet/config/merchant-settings/get',
  '/fleet/config/merchant-settings/set',
]);

/** The fleet operations the operator calls for an account it names (`account_id`). */
const NAMING_OPERATIONS: ReadonlySet<string> = new Set<OperationPath>([
  '/fleet/facts',
  '/fleet/config/get',
  '/fleet/config/set',
  '/fleet/diagnostics',
  '/fleet/end-of-day',
  '/terminal/claim',
  '/terminal/create',
  '/credential/revoke',
  '/credential/rotate',
  '/account/credential/add',
]);

/**
 * Refuses (403) an operation the role does not call. The operator calls its own, and the
 * fleet operations for an account it names; it sees no payment, event or webhook of an
 * account (docs/tenants.md).
 */
export function checkRole(path: string, role: Role): void {
  if (OPERATOR_OPERATIONS.has(path)) {
    if (role !== 'operator') {
      throw new ApiError('FORBIDDEN', `${path} is the operator's; this credential is not`);
    }
    return;
  }
  if (role === 'operator' && !NAMING_OPERATIONS.has(path)) {
    throw new ApiError(
      'FORBIDDEN',
      `an operator credential does not call ${path}: it is a merchant account's operation`,
    );
  }
}

/**
 * The principal a fleet operation acts as: the operator as the account it names (refused
 * 400 when it names none), an account credential as itself (naming another account is as
 * naming one that does not exist: 404, nothing of it confirmed).
 */
export async function actingFor(
  principal: Principal,
  accountId: string | undefined,
  exists: (accountId: string) => Promise<boolean>,
): Promise<Principal> {
  if (principal.role === 'operator') {
    if (accountId === undefined) {
      throw new ApiError(
        'INVALID_REQUEST',
        'account_id: the operator names the account it acts for',
      );
    }
    if (!(await exists(accountId))) throw new ApiError('NOT_FOUND', `no account ${accountId}`);
    return { ...principal, accountId };
  }
  if (accountId !== undefined && accountId !== principal.accountId) {
    throw new ApiError('NOT_FOUND', `no account ${accountId}`);
  }
  return principal;
}

/**
 * Lets the operator alone act relay-wide (the relay's layer of configuration): any other
 * role is refused 403, and an `account_id` beside it 400, as it names no account.
 */
export function actingRelayWide(principal: Principal, accountId: string | undefined): void {
  if (principal.role !== 'operator') {
    throw new ApiError(
      'FORBIDDEN',
      "the relay-wide layer is the operator's; this credential is not",
    );
  }
  if (accountId !== undefined) {
    throw new ApiError('INVALID_REQUEST', 'account_id: the relay-wide layer names no account');
  }
}
