/**
 * The one error type the API's operations throw, wherever they run (the relay, or the
 * agent's local API): a code of the catalogue, its fixed status, a description.
 */
import { ERROR_CATALOGUE, type ErrorCode } from './errors.js';

export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    description: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
    this.name = 'ApiError';
    this.status = ERROR_CATALOGUE[code].status;
  }
}
