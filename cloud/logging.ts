/** pino options shared by every logger of the relay: secrets and card data never reach a log. */
import type { LoggerOptions } from 'pino';
import { SECRET_FIELDS, secretRedactor } from '../protocol/index.js';

const redactSecrets = secretRedactor(SECRET_FIELDS);

export function loggerOptions(level: string): LoggerOptions {
  return { level, hooks: { streamWrite: redactSecrets } };
}
