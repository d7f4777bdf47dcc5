/**
 * `tps agent doctor` for a ZVT terminal (`reader.protocol: zvt`): the driver's record in the
 * data directory, then the line (serial device or TCP), then a status enquiry (05 01), which
 * changes nothing on the terminal: no registration, no payment. An emulated terminal's
 * memory file is read, not opened.
 */
import { existsSync } from 'node:fs';
import { parseTerminalMemory } from '../firmware-bridge/emulator/zvt/terminal-memory.js';
import { statusEnquiry } from '../firmware-bridge/zvt/command-builders.js';
import { openZvtChannel, type ClosableApduChannel } from '../firmware-bridge/zvt/reader/connect.js';
import { parseStateFile } from '../firmware-bridge/zvt/reader/driver-state.js';
import { terminalStatusText } from '../firmware-bridge/zvt/reader/result-codes.js';
import { ZvtSession } from '../firmware-bridge/zvt/session.js';
import type { AgentConfig } from './config.js';
import type { CheckResult } from './doctor-check.js';
import { zvtStateFile } from './zvt-reader.js';

export async function checkZvtReader(
  config: AgentConfig,
  timeoutMs: number,
  withTimeout: <T>(promise: Promise<T>, ms: number) => Promise<T>,
): Promise<CheckResult[]> {
  const { reader } = config;
  const profile = reader.profile ?? 'generic';
  const results: CheckResult[] = [checkDriverState(zvtStateFile(config.data_dir))];
  if (reader.emulated) {
    const file = reader.emulated.state_file;
    try {
      const entries = existsSync(file) ? parseTerminalMemory(file).length : 0;
      results.push({
        status: 'ok',
        title: `ZVT terminal: emulated (profile ${profile}), memory ${file} (${entries} entries)`,
      });
    } catch (error) {
      results.push({
        status: 'fail',
        title: `ZVT terminal: emulated, memory ${file}`,
        detail: (error as Error).message,
      });
    }
    return results;
  }
  const target = reader.tcp
    ? { tcp: reader.tcp }
    : { port: reader.port ?? '', baudRate: reader.baud_rate };
  const where = reader.tcp ? `tcp://${reader.tcp}` : (reader.port ?? '');
  let channel: ClosableApduChannel;
  try {
    channel = await withTimeout(openZvtChannel(target, { connectTimeoutMs: timeoutMs }), timeoutMs);
  } catch (error) {
    return [
      ...results,
      {
        status: 'fail',
        title: `ZVT terminal ${where}: cannot open`,
        detail: reader.tcp
          ? `${(error as Error).message}\nIs the terminal on and on this network, with ECR over TCP enabled on this port (often 20007)? Is the agent connected to it (a terminal takes one ECR)? systemctl stop tps-agent first.`
          : `${(error as Error).message}\nIs the agent running (it holds the port)? systemctl stop tps-agent first. Is the user in the dialout group? Is the device path right (ls -l /dev/serial/by-id/)?`,
      },
    ];
  }
  results.push({ status: 'ok', title: `ZVT terminal ${channel.description}: opened` });
  const session = new ZvtSession(channel, { t3Ms: timeoutMs });
  try {
    const outcome = await withTimeout(
      session.run(statusEnquiry({ password: reader.password })),
      timeoutMs * 2,
    );
    const status = outcome.completion?.status;
    if (outcome.kind === 'refused') {
      results.push({
        status: 'fail',
        title: 'ZVT terminal refuses the status enquiry',
        detail: `result code 0x${(outcome.resultCode ?? 0).toString(16).padStart(2, '0')}: check reader.password (the terminal's, 6 digits) and that ECR access is enabled`,
      });
    } else {
      results.push({
        status: status && status.terminalStatus !== 0 ? 'warn' : 'ok',
        title: 'ZVT terminal answers the status enquiry',
        detail: status
          ? `${terminalStatusText(status.terminalStatus)}${status.softwareVersion ? `; software ${status.softwareVersion}` : ''}; profile ${profile}`
          : `it ended with ${outcome.kind}; profile ${profile}`,
      });
    }
  } catch (error) {
    results.push({
      status: 'fail',
      title: 'ZVT terminal does not answer',
      detail: `${(error as Error).message}\nCheck the cable, the power${reader.tcp ? '' : ' and reader.baud_rate (ZVT terminals ship at 9600, 8N2)'}.`,
    });
  } finally {
    await session.close().catch(() => undefined);
  }
  return results;
}

function checkDriverState(file: string): CheckResult {
  if (!existsSync(file))
    return { status: 'ok', title: `ZVT driver record: ${file} (not created yet)` };
  try {
    const state = parseStateFile(file);
    const open = state.records.filter((r) => r.phase === 'IN_PROGRESS' || r.reversal_pending);
    return {
      status: open.length ? 'warn' : 'ok',
      title: `ZVT driver record: ${file}`,
      detail: open.length
        ? `${open.length} transaction(s) not settled yet (${open.map((r) => r.transaction_id).join(', ')}): the agent asks the terminal at its next start`
        : `${state.records.length} transaction(s) recorded`,
    };
  } catch (error) {
    return {
      status: 'fail',
      title: `ZVT driver record: ${file}`,
      detail: `${(error as Error).message}\nThe agent will not drive the terminal until it reads.`,
    };
  }
}
