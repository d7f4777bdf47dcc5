/**
 * The agent's pino logger: secrets and card data never reach a log (architecture
 * invariant 7, docs/architecture.md). The same SECRET_FIELDS as the relay, wherever they appear in a log object,
 * plus the key material of the broker config.
 */
import pino, { type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { partMixin } from '../common/logging.js';
import { secretRedactor } from '../common/redact.js';
import { SECRET_FIELDS } from '../protocol/secrets.js';

const redactSecrets = secretRedactor([...SECRET_FIELDS, 'key', 'cert']);

export function agentLoggerOptions(
  level: string,
  terminalId?: string,
  onChild?: (child: Logger) => void,
): LoggerOptions {
  return {
    level,
    ...(onChild ? { onChild } : {}),
    name: 'tps-agent',
    base: terminalId ? { terminal_id: terminalId } : {},
    mixin: partMixin,
    hooks: { streamWrite: redactSecrets },
  };
}

/** Logs as JSON lines to stdout (journald keeps them under systemd), or to `destination`. */
export function createAgentLogger(
  level: string,
  terminalId?: string,
  destination?: DestinationStream,
  onChild?: (child: Logger) => void,
): Logger {
  const options = agentLoggerOptions(level, terminalId, onChild);
  return destination ? pino(options, destination) : pino(options);
}
