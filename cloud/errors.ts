/** The relay's operations throw the API's one error type; the HTTP layer renders it. */
export { ApiError } from '../protocol/api-error.js';
