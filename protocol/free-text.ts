/**
 * The free text of what a terminal says to the relay: the members whose text a reader, a
 * payment terminal or an agent chose, where a card number printed in full can hide (a
 * ZVT terminal's receipt lines, a reader's screen text, an error's words). Both ends mask
 * the card numbers in them (common/card-numbers.ts): the agent before a report leaves the
 * terminal, the relay before it keeps or serves what an agent sent.
 *
 * Members with a fixed form (ids, references, versions, codes) are not free text: their
 * patterns have no room for `*`, and the relay matches them against its own.
 */
import { maskCardNumbers } from '../common/card-numbers.js';
import type { ConfigReportMessage } from './fleet-config.js';
import type { DiagnosticReplyMessage, FactsMessage } from './fleet-diagnostics.js';
import type { TerminalReport } from './terminal-link.js';
import type { UpdateStatusMessage } from './update.js';

/** Paths of free-text members; `[]` stands for each element of an array. */
export const FREE_TEXT = {
  /** A transaction report, and equally the outcome an agent keeps of it. */
  transaction: [
    'result_description',
    'details.receipt_details_customer',
    'details.receipt_details_merchant',
    'details.payment_method_details.application_name',
    'details.dcc.provider',
    'details.dcc.exchange_rate_provider',
  ],
  status: ['readings.screen_message'],
  settlement: ['settlement.result_description', 'settlement.receipt_text'],
  commandRefused: ['error.description'],
  configReport: ['reason'],
  facts: ['agent_version', 'node_version', 'reader.protocol', 'reader.model', 'reader.firmware'],
  updateStatus: ['phase', 'last.result', 'last.reason'],
  diagnosticReply: [
    'error',
    'doctor.checks[].title',
    'doctor.checks[].detail',
    'logs.lines[]',
    'trace.frames[].text',
  ],
} as const;

/** A message with the card numbers of its free text masked, and the paths where one was. */
export interface Masked<T> {
  value: T;
  /** The paths (as in FREE_TEXT) that held a card number; empty: `value` is the input. */
  fields: string[];
}

/**
 * `value` with the card numbers in its members at `paths` masked; untouched members are
 * shared with the input, which is never changed. Masking keeps a text's length and
 * puts `*` only where digits were, so the value still has its schema's shape.
 */
export function maskFreeText<T>(value: T, paths: readonly string[]): Masked<T> {
  const fields: string[] = [];
  let out: unknown = value;
  for (const path of paths) {
    const next = maskAt(out, path.split('.'));
    if (next !== out) {
      fields.push(path);
      out = next;
    }
  }
  return { value: out as T, fields };
}

function maskAt(value: unknown, segments: readonly string[]): unknown {
  if (segments.length === 0) return typeof value === 'string' ? maskCardNumbers(value) : value;
  if (value === null || typeof value !== 'object') return value;
  const [segment, ...rest] = segments as [string, ...string[]];
  const each = segment.endsWith('[]');
  const key = each ? segment.slice(0, -2) : segment;
  if (!Object.hasOwn(value, key)) return value;
  const member = (value as Record<string, unknown>)[key];
  let next: unknown;
  if (each) {
    if (!Array.isArray(member)) return value;
    const items = member.map((item) => maskAt(item, rest));
    next = items.some((item, i) => item !== member[i]) ? items : member;
  } else {
    next = maskAt(member, rest);
  }
  return next === member ? value : { ...value, [key]: next };
}

/**
 * A `local_transaction` report carries the whole transaction: the members of a transaction
 * report's `details` are the transaction's own, under `transaction`.
 */
const LOCAL_TRANSACTION_TEXT = FREE_TEXT.transaction.map(
  (path) => `transaction.${path.replace(/^details\./, '')}`,
);

const REPORT_TEXT: Record<TerminalReport['type'], readonly string[]> = {
  transaction: FREE_TEXT.transaction,
  local_transaction: LOCAL_TRANSACTION_TEXT,
  status: FREE_TEXT.status,
  settlement: FREE_TEXT.settlement,
  command_refused: FREE_TEXT.commandRefused,
};

export const maskReportText = (report: TerminalReport): Masked<TerminalReport> =>
  maskFreeText(report, REPORT_TEXT[report.type]);

export const maskConfigReportText = (message: ConfigReportMessage) =>
  maskFreeText(message, FREE_TEXT.configReport);

export const maskFactsText = (message: FactsMessage) => maskFreeText(message, FREE_TEXT.facts);

export const maskUpdateStatusText = (message: UpdateStatusMessage) =>
  maskFreeText(message, FREE_TEXT.updateStatus);

export const maskDiagnosticReplyText = (message: DiagnosticReplyMessage) =>
  maskFreeText(message, FREE_TEXT.diagnosticReply);
