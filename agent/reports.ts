/**
 * What the executor writes: the reports it sends for its own decisions (as opposed to the
 * reader's results), and the shapes of a command in the journal and at the reader.
 */
import type { Logger } from 'pino';
import type { Masked } from '../protocol/free-text.js';
import type {
  StartTransactionCommand,
  TerminalCommand,
  TerminalReport,
} from '../protocol/terminal-link.js';
import type { CommandOutcome } from './journal.js';
import type { ReaderResult, ReaderStart } from './ports.js';
import type { Outcome } from './recovery.js';

type Phase = 'CUSTOMER_IDENTIFIED' | 'COMPLETED' | 'CANCELLED';

/** A transaction the reader's record does not know: it never reached the reader. */
export const NEVER_RAN: Outcome = {
  result_code: 'ABORTED',
  result_description: 'The transaction never reached the card reader',
};
/** Cancelled by the relay before the reader had it. */
export const CANCELLED_BEFORE_START: Outcome = {
  result_code: 'ABORTED',
  result_description: 'Cancelled before the card reader started it',
};
/** A start that arrived after its expires_at. */
export const EXPIRED: Outcome = {
  result_code: 'EXPIRED',
  result_description: 'The start reached the terminal after it expired',
};

/** The start as the reader gets it: without the relay's bookkeeping. */
export function readerStart(command: StartTransactionCommand): ReaderStart {
  const { type: _t, command_id: _c, external_id: _e, expires_at: _x, ...request } = command;
  return request;
}

/** A command as the journal keeps it: a print without its image. */
export function commandRow(command: TerminalCommand, outcome: CommandOutcome) {
  const body =
    command.type === 'print'
      ? { ...command, contents: `(${command.contents.length} base64 characters)` }
      : command;
  return {
    command_id: command.command_id,
    type: command.type,
    transaction_id: transactionIdOf(command),
    outcome,
    body,
  };
}

export function transactionIdOf(command: TerminalCommand): string | undefined {
  return command.type === 'print' || command.type === 'terminal.end_of_day'
    ? undefined
    : command.transaction_id;
}

export function transactionReport(
  id: string,
  phase: Phase,
  outcome: Partial<Outcome>,
): TerminalReport {
  return { type: 'transaction', transaction_id: id, phase, ...outcome };
}

export function outcomeOf(result: ReaderResult): Outcome {
  const { transaction_id: _id, phase: _phase, ...outcome } = result;
  return outcome;
}

/** An error for the logs: message, and the code and flags callers branch on. */
export function errorInfo(error: unknown) {
  if (!(error instanceof Error)) return { message: String(error) };
  const { code, disconnected } = error as { code?: unknown; disconnected?: unknown };
  return { message: error.message, code, disconnected };
}

/**
 * What leaves the terminal, with card numbers in its free text masked (`masked`, made by
 * one of protocol/free-text.ts's functions): a reader or ZVT terminal may print a number in
 * full on a receipt line or a screen, and the drivers pass their text on untouched. When
 * one was masked, a security event names the members, never the digits.
 */
export function withoutCardNumbers<T>(
  logger: Pick<Logger, 'warn'>,
  kind: string,
  masked: Masked<T>,
  context: Record<string, unknown> = {},
): T {
  if (masked.fields.length > 0) {
    logger.warn(
      { security_event: 'card_number_in_text', kind, ...context, fields: masked.fields },
      'security: the reader gave a full card number in free text; it was masked to its first 6 and last 4 digits',
    );
  }
  return masked.value;
}
