/**
 * The relay's instrumentation points, as node:diagnostics_channel channels: nothing is
 * made or sent while nobody subscribes, and any tool in the process can (an APM agent,
 * the bench, which times long-poll wake-ups from the moment a report is taken in to the
 * microsecond instead of from the millisecond of `updated_at`). Messages are the relay's
 * own objects: a subscriber reads them and must not change them.
 */
import diagnosticsChannel from 'node:diagnostics_channel';
import type { TerminalReport } from '../../protocol/index.js';

export const REPORT_TAKEN_CHANNEL = 'tps:terminal-report';

/** Published when the relay takes in a terminal's report, before deciding anything on it. */
export interface ReportTaken {
  terminalId: string;
  report: TerminalReport;
}

const reportTaken = diagnosticsChannel.channel(REPORT_TAKEN_CHANNEL);

export function publishReportTaken(terminalId: string, report: TerminalReport): void {
  if (reportTaken.hasSubscribers) reportTaken.publish({ terminalId, report } satisfies ReportTaken);
}
