/** Turns every failure into the spec's error object with the catalogue's status. */
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { clientErrorAnswer, describeZodError, errorBody } from '../../protocol/error-body.js';
import { ERROR_CATALOGUE, type ErrorCode } from '../../protocol/index.js';
import { ApiError } from '../errors.js';

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
  if (socket.writable) socket.write(clientErrorAnswer(error.code));
  socket.destroy();
}
