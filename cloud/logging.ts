/** pino options shared by every logger of the relay: secrets and card data never reach a log. */
import type { LoggerOptions } from 'pino';
import { partMixin } from '../common/logging.js';
import { secretRedactor } from '../common/redact.js';
import { SECRET_FIELDS } from '../protocol/index.js';

const redactSecrets = secretRedactor(SECRET_FIELDS);

export function loggerOptions(level: string): LoggerOptions {
  return { level, mixin: partMixin, hooks: { streamWrite: redactSecrets } };
}
