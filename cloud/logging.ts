/** pino options shared by every logger of the relay: secrets and card data never reach a log. */
import type { LoggerOptions } from 'pino';
import { SECRET_FIELDS } from '../protocol/index.js';

const redactPaths = SECRET_FIELDS.flatMap((field) => [
  field,
  `*.${field}`,
  `*.*.${field}`,
  `*.*.*.${field}`,
]);

export function loggerOptions(level: string): LoggerOptions {
  return {
    level,
    redact: { paths: ['req.headers.authorization', ...redactPaths], censor: '[redacted]' },
  };
}
