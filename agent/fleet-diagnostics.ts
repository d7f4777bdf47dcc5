/**
 * The agent's answers to diagnostic requests (protocol/fleet-diagnostics.ts): its doctor
 * checks as a running agent sees them, its newest log lines, and the trace of the reader
 * line during its last payment. Every answer fits one message (DIAGNOSTIC_REPLY_BYTES):
 * the oldest lines or frames give way first, and the answer says it was cut.
 */
import type { Logger } from 'pino';
import {
  DIAGNOSTIC_LOG_LINES,
  DIAGNOSTIC_REPLY_BYTES,
  DiagnosticRequestMessage,
  type DiagnosticReplyMessage,
} from '../protocol/fleet-diagnostics.js';
import type { Clock } from '../common/clock.js';
import { withDeadline } from '../common/deadline.js';
import { printable } from '../common/terminal-text.js';
import type { AgentConfig } from './config.js';
import type { CheckResult } from './doctor-check.js';
import { checkClock, checkJournal } from './doctor.js';
import type { LogRing } from './fleet-logs.js';
import type { LineTrace } from './fleet-trace.js';
import type { ReaderPort } from './ports.js';

export interface DiagnosticsSources {
  config: AgentConfig;
  clock: Clock;
  reader: Pick<ReaderPort, 'status'>;
  brokerConnected(): boolean;
  /** What the agent did with the newest configuration, for the checklist. */
  configState(): string;
  logs?: LogRing;
  trace?: LineTrace;
  /** A reader check gives up after this long (default 3 s). */
  timeoutMs?: number;
  logger: Logger;
}

/**
 * What goes out is shown on an operator's terminal: control characters travel as escapes
 * (common/terminal-text.ts), or the relay refuses the answer (protocol/plain-text.ts).
 * Escapes lengthen a text: each is cut to its field's bound after.
 */
const multiline = { multiline: true };

export async function answerDiagnostic(
  value: unknown,
  sources: DiagnosticsSources,
): Promise<DiagnosticReplyMessage | undefined> {
  const parsed = DiagnosticRequestMessage.safeParse(value);
  if (!parsed.success) {
    sources.logger.warn('ignored an invalid diagnostic request');
    return undefined;
  }
  const request = parsed.data;
  const base = { request_id: request.request_id, kind: request.kind };
  try {
    switch (request.kind) {
      case 'doctor':
        return { ...base, doctor: { checks: await liveChecks(sources) } };
      case 'logs': {
        if (!sources.logs) return { ...base, error: 'this agent keeps no log lines' };
        const wanted = sources.logs
          .newest(request.lines ?? DIAGNOSTIC_LOG_LINES)
          .map((line) => printable(line, multiline).slice(0, 4000));
        const lines = fitted(wanted, (kept) => ({
          ...base,
          logs: { lines: kept, truncated: true },
        }));
        return { ...base, logs: { lines, truncated: lines.length < wanted.length } };
      }
      case 'trace': {
        if (!sources.trace) {
          return { ...base, error: 'no trace of the reader line: kept for native readers only' };
        }
        const { transactionId, dropped, ...snapshot } = sources.trace.snapshot();
        const frames = snapshot.frames.map((f) => ({
          ...f,
          text: printable(f.text, multiline).slice(0, 400),
        }));
        const head = {
          ...(transactionId !== undefined
            ? { transaction_id: printable(transactionId).slice(0, 64) }
            : {}),
        };
        const kept = fitted(frames, (some) => ({
          ...base,
          trace: { ...head, frames: some, truncated: true },
        }));
        return {
          ...base,
          trace: { ...head, frames: kept, truncated: dropped > 0 || kept.length < frames.length },
        };
      }
    }
  } catch (error) {
    return { ...base, error: printable((error as Error).message, multiline).slice(0, 500) };
  }
}

/** The newest items whose answer fits DIAGNOSTIC_REPLY_BYTES. */
function fitted<T>(items: T[], answer: (kept: T[]) => object): T[] {
  let kept = items;
  while (
    kept.length > 0 &&
    Buffer.byteLength(JSON.stringify(answer(kept))) > DIAGNOSTIC_REPLY_BYTES
  ) {
    kept = kept.slice(Math.max(1, Math.floor(kept.length / 10)));
  }
  return kept;
}

async function liveChecks(sources: DiagnosticsSources): Promise<CheckResult[]> {
  const { config } = sources;
  const checks: CheckResult[] = [checkClock(sources.clock), checkJournal(config)];
  checks.push(
    sources.brokerConnected()
      ? { status: 'ok', title: `broker: connected to ${config.broker.url}` }
      : { status: 'fail', title: `broker: not connected to ${config.broker.url}` },
  );
  checks.push(await readerCheck(sources));
  checks.push({
    status: 'ok',
    title: `printer: ${config.printer.type === 'none' ? 'none configured' : `${config.printer.type}, head ${config.printer.head_width} dots`}`,
  });
  checks.push({ status: 'ok', title: `configuration: ${sources.configState()}` });
  return checks.map((c) => ({
    ...c,
    title: printable(c.title).slice(0, 300),
    ...(c.detail !== undefined ? { detail: printable(c.detail, multiline).slice(0, 1000) } : {}),
  }));
}

async function readerCheck(sources: DiagnosticsSources): Promise<CheckResult> {
  const title = `reader: ${sources.config.reader.protocol}`;
  const timeoutMs = sources.timeoutMs ?? 3000;
  try {
    const status = await withDeadline(sources.reader.status(), timeoutMs);
    const battery =
      status.battery_percentage !== undefined ? `, battery ${status.battery_percentage} %` : '';
    return { status: 'ok', title: `${title}: answers${battery}` };
  } catch (error) {
    return { status: 'fail', title: `${title}: does not answer`, detail: (error as Error).message };
  }
}
