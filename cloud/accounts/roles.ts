/**
 * Which role may call which operation (docs/tenants.md, "Who may do what"), checked once
 * a request is authenticated, before its body is read. What a role may do within an
 * operation (its own account, its own terminal) the operation checks itself.
 */
import type { OperationPath } from '../../protocol/index.js';
import { ApiError } from '../errors.js';
import type { Role } from './principal.js';

/** The operator's operations; no other role calls them. */
const OPERATOR_OPERATIONS: ReadonlySet<string> = new Set<OperationPath>([
  '/account/create',
  '/account/list',
  '/account/get',
  '/account/disable',
  '/account/enable',
]);

/**
 * Refuses (403) an operation the role does not call. The operator calls its own alone so
 * far: it sees no payment, event or webhook of an account, and its fleet operations that
 * name an account are not built yet (docs/tenants.md).
 */
export function checkRole(path: string, role: Role): void {
  if (OPERATOR_OPERATIONS.has(path)) {
    if (role !== 'operator') {
      throw new ApiError('FORBIDDEN', `${path} is the operator's; this credential is not`);
    }
    return;
  }
  if (role === 'operator') {
    throw new ApiError(
      'FORBIDDEN',
      `an operator credential does not call ${path}: it is a merchant account's operation`,
    );
  }
}
