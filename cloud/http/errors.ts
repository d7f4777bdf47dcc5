/** Turns every failure into the spec's error object with the catalogue's status. */
import http from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ERROR_CATALOGUE, type ErrorCode } from '../../protocol/index.js';
import { ApiError } from '../errors.js';

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

/** fastify's own 4xx codes, mapped onto the catalogue. */
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'INVALID_REQUEST',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'INVALID_JSON',
  FST_ERR_CTP_INVALID_JSON_BODY: 'INVALID_JSON',
  FST_ERR_CTP_BODY_TOO_LARGE: 'BODY_TOO_LARGE',
};

export function sendError(reply: FastifyReply, code: ErrorCode, description: string) {
  return reply.status(ERROR_CATALOGUE[code].status).send(errorBody(code, description));
}

export function handleError(
  error: FastifyError | Error,
  request: FastifyRequest,
  reply: FastifyReply,
) {
  if (error instanceof ApiError) {
    reply.headers(error.headers);
    return sendError(reply, error.code, error.message);
  }
  if (error instanceof z.ZodError) {
    return sendError(reply, 'INVALID_REQUEST', describeZodError(error));
  }
  const fastifyCode = 'code' in error ? FASTIFY_CODES[error.code] : undefined;
  if (fastifyCode === 'UNSUPPORTED_MEDIA_TYPE') {
    return sendError(reply, fastifyCode, 'the body must be sent as Content-Type: application/json');
  }
  if (fastifyCode) return sendError(reply, fastifyCode, error.message);
  if (error instanceof SyntaxError) return sendError(reply, 'INVALID_JSON', error.message);
  const status = 'statusCode' in error ? error.statusCode : undefined;
  if (status !== undefined && status >= 400 && status < 500) {
    return sendError(reply, 'INVALID_REQUEST', error.message);
  }
  request.log.error({ err: error }, 'unexpected error');
  return sendError(reply, 'INTERNAL_ERROR', 'unexpected fault; the request may be repeated');
}

/**
 * Answers what node's HTTP parser refuses before fastify sees a request (a request not
 * sent whole in time, headers too large, bytes that are not HTTP) with the error object,
 * then closes the connection, as node itself would.
 */
export function handleClientError(error: Error & { code?: string }, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, description]: [number, ErrorCode, string] =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'REQUEST_TIMEOUT', 'the request was not sent whole in time']
      : error.code === 'HPE_HEADER_OVERFLOW'
        ? [400, 'INVALID_REQUEST', 'the request headers are too large']
        : [400, 'INVALID_REQUEST', 'the request is not valid HTTP'];
  if (socket.writable) {
    const body = JSON.stringify(errorBody(code, description));
    socket.write(
      `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nConnection: close\r\n` +
        `Content-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}
