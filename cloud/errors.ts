/** The one error type the relay's operations throw; the HTTP layer renders it. */
import { ERROR_CATALOGUE, type ErrorCode } from '../protocol/index.js';

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
