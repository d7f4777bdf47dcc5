/** The spec's error object for a code of the catalogue, and a zod failure as its description. */
import type { z } from 'zod';
import type { ErrorCode } from './errors.js';

const DESCRIPTION_MAX = 255;

export function errorBody(code: ErrorCode, description: string) {
  const text =
    description.length > DESCRIPTION_MAX
      ? `${description.slice(0, DESCRIPTION_MAX - 1)}…`
      : description;
  return { error: { code, description: text } };
}

/** `field.path: message; …` for every issue, so the client sees which field is wrong. */
export function describeZodError(error: z.ZodError): string {
  return error.issues
    .map((issue) => {
      const field = issue.path.length > 0 ? issue.path.join('.') : 'body';
      return `${field}: ${issue.message}`;
    })
    .join('; ');
}

/**
 * The raw HTTP answer to what a server's parser refuses before a request exists (a
 * request not sent whole in time, headers too large, bytes that are not HTTP), with the
 * error object; the server closes the connection after it, as node itself would.
 */
export function clientErrorAnswer(nodeCode: string | undefined): string {
  const [status, reason, code, description]: [number, string, ErrorCode, string] =
    nodeCode === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'Request Timeout', 'REQUEST_TIMEOUT', 'the request was not sent whole in time']
      : nodeCode === 'HPE_HEADER_OVERFLOW'
        ? [400, 'Bad Request', 'INVALID_REQUEST', 'the request headers are too large']
        : [400, 'Bad Request', 'INVALID_REQUEST', 'the request is not valid HTTP'];
  const body = JSON.stringify(errorBody(code, description));
  return (
    `HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\n` +
    `Content-Type: application/json; charset=utf-8\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}
