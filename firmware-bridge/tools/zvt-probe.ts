/**
 * The probe for ZVT: does a payment terminal answer, and what does it report? It runs a
 * status enquiry (05 01), and with `register` a registration (06 00) first; nothing else. A
 * status enquiry starts no payment. A registration (config BE, EUR: the command builders'
 * defaults) changes how the terminal talks to the ECR until the ECR registers again.
 */
import { readBmps } from '../zvt/bmp-values.js';
import type { ApduChannel } from '../zvt/channel.js';
import { registration, statusEnquiry } from '../zvt/command-builders.js';
import { ZvtError } from '../zvt/errors.js';
import type { EcrCommand } from '../zvt/message-types.js';
import { ZvtSession, type ZvtOutcome } from '../zvt/session.js';
import { resultCodeText, statusByteText, terminalStatusText } from './zvt-names.js';

export interface ZvtProbeOptions {
  /** The terminal's password (default 000000). */
  password?: string;
  /** Register (06 00) before the status enquiry. */
  register?: boolean;
  /** How long the terminal may take to accept, and then to finish, each command (default 5000 ms). */
  timeoutMs?: number;
}

export interface ZvtProbeReport {
  /** Every command completed. */
  ok: boolean;
  /** Something answered: a completion, or a refusal or abort with its result code. */
  answered: boolean;
  registration?: {
    /** BMP 19 of the completion: 01 initialisation, 02 diagnosis, 04 OPT action necessary. */
    statusByte?: number;
    terminalId?: string;
    /** ISO 4217 numeric, echoed when sent. */
    currency?: number;
  };
  status?: {
    softwareVersion?: string;
    terminalStatus: number;
    /** `00 (PT ready)`. */
    terminalStatusText: string;
  };
  /** What went wrong, by command: `status enquiry: T3_TIMEOUT (...)`. */
  errors: string[];
}

export async function probeZvtTerminal(
  channel: ApduChannel,
  options: ZvtProbeOptions = {},
): Promise<ZvtProbeReport> {
  const timeoutMs = options.timeoutMs ?? 5000;
  const session = new ZvtSession(channel, { t3Ms: timeoutMs, t4Ms: timeoutMs });
  const report: ZvtProbeReport = { ok: false, answered: false, errors: [] };
  const password = options.password;
  const finish = () => {
    report.ok = report.errors.length === 0;
    return report;
  };
  const run = async (name: string, command: EcrCommand): Promise<ZvtOutcome | undefined> => {
    try {
      const outcome = await session.run(command);
      report.answered = true;
      if (outcome.kind === 'completed' || outcome.kind === 'acknowledged') return outcome;
      const code = outcome.resultCode;
      const why = code === undefined ? 'no result code' : resultCodeText(code);
      const how = outcome.kind === 'refused' ? `REFUSED (84 ${why})` : `ABORTED (06 1E ${why})`;
      report.errors.push(`${name}: ${how}`);
    } catch (error) {
      const code = error instanceof ZvtError ? error.code : 'ERROR';
      const message = error instanceof Error ? error.message : String(error);
      report.errors.push(`${name}: ${code} (${message})`);
    }
    return undefined;
  };
  try {
    if (options.register) {
      const registered = await run('registration', registration({ password }));
      if (registered) {
        const values = readBmps(registered.completion?.bmps ?? []);
        report.registration = {
          ...(values.paymentType === undefined ? {} : { statusByte: values.paymentType }),
          ...(values.terminalId === undefined ? {} : { terminalId: values.terminalId }),
          ...(values.currency === undefined ? {} : { currency: values.currency }),
        };
      }
    }
    // Nothing answered the registration: the enquiry would only wait as long again.
    if (options.register && !report.answered) return finish();
    const enquired = await run('status enquiry', statusEnquiry({ password }));
    const status = enquired?.completion?.status;
    if (status)
      report.status = { ...status, terminalStatusText: terminalStatusText(status.terminalStatus) };
    else if (enquired)
      report.errors.push('status enquiry: the completion carried no terminal status');
  } finally {
    await session.close();
  }
  return finish();
}

/** The report for a person. */
export function zvtProbeText(where: string, report: ZvtProbeReport): string {
  const lines = [
    report.ok
      ? `ZVT terminal at ${where} answers`
      : `ZVT terminal at ${where}: ${report.answered ? 'ANSWERS WITH AN ERROR' : 'NO ANSWER'}`,
  ];
  const registered = report.registration;
  if (registered) {
    const parts = [
      registered.terminalId && `terminal id ${registered.terminalId}`,
      registered.currency !== undefined && `currency ${registered.currency}`,
      registered.statusByte !== undefined && `status byte ${statusByteText(registered.statusByte)}`,
    ].filter(Boolean);
    lines.push(`  registration:    ${parts.length > 0 ? parts.join(', ') : 'completed'}`);
  }
  const status = report.status;
  if (status) {
    lines.push(`  terminal status: ${status.terminalStatusText}`);
    if (status.softwareVersion !== undefined) {
      lines.push(`  software:        ${status.softwareVersion}`);
    }
  }
  for (const error of report.errors) lines.push(`  error: ${error}`);
  return `${lines.join('\n')}\n`;
}
