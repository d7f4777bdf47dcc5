/**
 * The probe: does a card reader answer on this line, and what does it report? It asks for
 * a status report and for the last transaction, nothing else: it never starts, continues,
 * cancels or reverses anything, so it is safe on a reader in use.
 */
import type { Duplex } from 'node:stream';
import type { LastTransactionRecord, ReaderStatus } from '../reader/card-reader.js';
import { SerialCardReader } from '../reader/serial-card-reader.js';
import type { SerialLinkError } from '../serial/errors.js';

export interface ProbeOptions {
  /** How long each answer may take once the reader acknowledged the question (default 3000 ms). */
  timeoutMs?: number;
  /** The line's speed, for the link's timeouts (default 115200). */
  baudRate?: number;
}

export interface ProbeReport {
  /** Both questions answered. */
  ok: boolean;
  status?: ReaderStatus;
  /** null: the reader answered that it has no record. */
  lastTransaction?: LastTransactionRecord | null;
  /** What went wrong, by question: `status: ACK_TIMEOUT (...)`. */
  errors: string[];
}

export async function probeReader(port: Duplex, options: ProbeOptions = {}): Promise<ProbeReport> {
  const reader = SerialCardReader.connect(port, {
    answerTimeoutMs: options.timeoutMs ?? 3000,
    link: { baudRate: options.baudRate },
  });
  const report: ProbeReport = { ok: false, errors: [] };
  const failed = (question: string) => (error: SerialLinkError) => {
    report.errors.push(`${question}: ${error.code ?? 'ERROR'} (${error.message})`);
  };
  try {
    await reader.status().then((status) => {
      report.status = status;
    }, failed('status'));
    await reader.lastTransaction().then((record) => {
      report.lastTransaction = record ?? null;
    }, failed('last transaction'));
  } finally {
    await reader.close();
  }
  report.ok = report.errors.length === 0;
  return report;
}

/** The report for a person. */
export function probeText(where: string, report: ProbeReport): string {
  const lines = [
    report.ok ? `card reader at ${where} answers` : `card reader at ${where}: NO ANSWER`,
  ];
  const status = report.status;
  if (status) {
    const battery =
      status.battery_percentage === undefined
        ? 'no battery'
        : `battery ${status.battery_percentage} %${status.battery_charging ? ', charging' : ''}`;
    const plugged =
      status.plugged_in === undefined ? '' : status.plugged_in ? ', plugged in' : ', on battery';
    const screen = status.screen_message === undefined ? '' : `, screen "${status.screen_message}"`;
    lines.push(`  status:           ${battery}${plugged}${screen}`);
  }
  if (report.lastTransaction === null) lines.push('  last transaction: none');
  const last = report.lastTransaction;
  if (last) {
    const outcome = [
      last.phase,
      last.result_code,
      last.result_description && `(${last.result_description})`,
    ];
    const amount = last.details?.total_amount ?? last.details?.authorized_amount;
    if (amount !== undefined) outcome.push(`amount ${amount}`);
    if (last.details?.reference) outcome.push(`reference ${last.details.reference}`);
    lines.push(`  last transaction: ${last.transaction_id} ${outcome.filter(Boolean).join(' ')}`);
  }
  for (const error of report.errors) lines.push(`  error: ${error}`);
  return `${lines.join('\n')}\n`;
}
