/**
 * `tps agent doctor`: the field engineer's checklist. Each check says ✓, ! (works, but
 * look) or ✗ with what to do; the exit code is 1 when any check failed. It never disturbs a
 * running agent: it reads the journal without writing, does not open an emulated reader's
 * memory, and signs in to the broker with its own client id (the agent's would be kicked).
 */
import { accessSync, constants, existsSync } from 'node:fs';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { MqttClient } from 'mqtt';
import { parseMemoryFile } from '../firmware-bridge/emulator/file-reader-memory.js';
import { ReceiptPrinter } from '../firmware-bridge/printer/printer.js';
import { connectTcpPrinter } from '../firmware-bridge/printer/tcp.js';
import { SerialCardReader } from '../firmware-bridge/reader/serial-card-reader.js';
import { openSerialPort } from '../firmware-bridge/transport/serial-port.js';
import { doctorClientId } from '../protocol/mqtt.js';
import { openBrokerSocket } from './broker-socket.js';
import type { Clock } from '../common/clock.js';
import { withDeadline } from '../common/deadline.js';
import { AgentConfigError, loadAgentConfig, type AgentConfig } from './config.js';
import type { CheckResult, CheckStatus } from './doctor-check.js';
import { checkZvtReader } from './doctor-zvt.js';

export type { CheckResult, CheckStatus };

export interface DoctorOptions {
  clock: Clock;
  /** Each network or device check gives up after this long (default 5 s). */
  timeoutMs?: number;
  write: (line: string) => void;
  /** One JSON object at the end ({config, checks, failed}) instead of the checklist lines. */
  json?: boolean;
}

const MARK: Record<CheckStatus, string> = { ok: '✓', warn: '!', fail: '✗' };

/** Runs every check, prints the checklist, returns the exit code (0 fine, 1 something failed). */
export async function runDoctor(configFile: string, options: DoctorOptions): Promise<number> {
  const results: CheckResult[] = [];
  const say = options.json ? () => undefined : options.write;
  const report = (result: CheckResult) => {
    results.push(result);
    say(
      `${MARK[result.status]} ${result.title}${result.detail ? `\n    ${result.detail.replaceAll('\n', '\n    ')}` : ''}`,
    );
  };
  const finish = (): number => {
    const failed = results.filter((r) => r.status === 'fail').length;
    if (options.json) {
      options.write(JSON.stringify({ config: configFile, checks: results, failed }));
    } else {
      say(failed ? `${failed} check(s) failed` : 'all checks passed');
    }
    return failed ? 1 : 0;
  };
  say(`tps agent doctor: ${configFile}`);
  let config: AgentConfig;
  try {
    config = loadAgentConfig(configFile);
    report({
      status: 'ok',
      title: `config: terminal ${config.terminal_id}, broker ${config.broker.url}`,
    });
  } catch (error) {
    const problems =
      error instanceof AgentConfigError ? error.problems : [(error as Error).message];
    report({ status: 'fail', title: 'config', detail: problems.join('\n') });
    return finish();
  }
  const timeoutMs = options.timeoutMs ?? 5000;
  report(checkClock(options.clock));
  report(checkJournal(config));
  for (const result of await checkReader(config, timeoutMs)) report(result);
  report(await checkPrinter(config, timeoutMs));
  for (const result of await checkBroker(config, timeoutMs)) report(result);
  return finish();
}

export function checkClock(clock: Clock): CheckResult {
  const now = clock.now();
  const year = now.getUTCFullYear();
  const title = `clock: ${now.toISOString()} (UTC)`;
  if (year < 2025 || year > 2100) {
    return {
      status: 'fail',
      title,
      detail:
        'the year is implausible: starts would be refused as expired (or accepted too late). ' +
        'Enable time sync: timedatectl set-ntp true',
    };
  }
  return {
    status: 'ok',
    title,
    detail:
      'compare with a watch: starts expire a minute after the POS asks, so the clock must be right to the second (NTP)',
  };
}

export function checkJournal(config: AgentConfig): CheckResult {
  const file = path.join(config.data_dir, 'agent.sqlite');
  if (!existsSync(file)) {
    try {
      accessSync(
        existsSync(config.data_dir) ? config.data_dir : path.dirname(config.data_dir),
        constants.W_OK,
      );
      return { status: 'ok', title: `journal: ${file} (not created yet)` };
    } catch {
      return {
        status: 'fail',
        title: `journal: cannot write ${config.data_dir}`,
        detail: 'the agent runs as tps-agent; see docs/agent.md',
      };
    }
  }
  let db: DatabaseSync | undefined;
  try {
    db = new DatabaseSync(file, { readOnly: true });
    const count = (sql: string) => (db!.prepare(sql).get() as { n: number } | undefined)?.n ?? 0;
    // Straight from the file: beside a running agent, a report acknowledged less than a
    // second ago may still be counted (its delete waits for the journal's next commit).
    const reports = count('SELECT count(*) AS n FROM outbox');
    const open = count(
      `SELECT count(*) AS n FROM transactions WHERE state IN ('QUEUED', 'RUNNING', 'PAUSED')`,
    );
    return {
      status: reports > 10 ? 'warn' : 'ok',
      title: `journal: ${file}`,
      detail: `${reports} report(s) waiting for the relay, ${open} transaction(s) in progress`,
    };
  } catch (error) {
    return { status: 'fail', title: `journal: ${file}`, detail: (error as Error).message };
  } finally {
    db?.close();
  }
}

async function checkReader(config: AgentConfig, timeoutMs: number): Promise<CheckResult[]> {
  const { reader } = config;
  if (reader.protocol === 'zvt') return checkZvtReader(config, timeoutMs, withTimeout);
  if (reader.emulated) {
    const file = reader.emulated.state_file;
    try {
      const records = existsSync(file) ? parseMemoryFile(file).length : 0;
      return [
        { status: 'ok', title: `card reader: emulated, memory ${file} (${records} records)` },
      ];
    } catch (error) {
      return [
        {
          status: 'fail',
          title: `card reader: emulated, memory ${file}`,
          detail: (error as Error).message,
        },
      ];
    }
  }
  const device = reader.port ?? '';
  let port;
  try {
    port = await withTimeout(openSerialPort(device, { baudRate: reader.baud_rate }), timeoutMs);
  } catch (error) {
    return [
      {
        status: 'fail',
        title: `card reader port ${device}: cannot open`,
        detail:
          `${(error as Error).message}\nIs the agent running (it holds the port)? systemctl stop tps-agent first. ` +
          'Is the user in the dialout group? Is the device path right (ls -l /dev/serial/by-id/)?',
      },
    ];
  }
  const results: CheckResult[] = [
    { status: 'ok', title: `card reader port ${port.description}: opened` },
  ];
  const driver = SerialCardReader.connect(port.stream, { link: { baudRate: reader.baud_rate } });
  try {
    const status = await withTimeout(driver.status(), timeoutMs);
    const last = await withTimeout(driver.lastTransaction(), timeoutMs);
    results.push({
      status: 'ok',
      title: 'card reader answers',
      detail: `status ${JSON.stringify(status)}; last transaction ${last ? `${last.transaction_id} ${last.phase}` : 'none'}`,
    });
  } catch (error) {
    results.push({
      status: 'fail',
      title: 'card reader does not answer',
      detail: `${(error as Error).message}\nCheck the cable, the power and reader.baud_rate.`,
    });
  } finally {
    await driver.close().catch(() => undefined);
    await port.close();
  }
  return results;
}

async function checkPrinter(config: AgentConfig, timeoutMs: number): Promise<CheckResult> {
  const printer = config.printer;
  if (printer.type === 'none') return { status: 'ok', title: 'printer: none configured' };
  const where = printer.type === 'serial' ? printer.path : `${printer.host}:${printer.port}`;
  let stream;
  let close: () => Promise<void>;
  try {
    if (printer.type === 'serial') {
      const port = await withTimeout(
        openSerialPort(printer.path, { baudRate: printer.baud_rate }),
        timeoutMs,
      );
      stream = port.stream;
      close = port.close;
    } else {
      const socket = await connectTcpPrinter({
        host: printer.host,
        port: printer.port,
        connectTimeoutMs: timeoutMs,
      });
      stream = socket;
      close = async () => void socket.destroy();
    }
  } catch (error) {
    return {
      status: 'fail',
      title: `printer ${where}: cannot open`,
      detail: (error as Error).message,
    };
  }
  const driver = new ReceiptPrinter(stream, { statusTimeoutMs: Math.min(timeoutMs, 2000) });
  try {
    const status = await withTimeout(driver.status(), timeoutMs);
    return { status: 'ok', title: `printer ${where} answers`, detail: JSON.stringify(status) };
  } catch (error) {
    return { status: 'fail', title: `printer ${where}`, detail: (error as Error).message };
  } finally {
    driver.close();
    await close();
  }
}

/** Signs in with the agent's credential under another client id; reads the agent's presence. */
export async function checkBroker(config: AgentConfig, timeoutMs: number): Promise<CheckResult[]> {
  const { broker } = config;
  const client = new MqttClient(() => openBrokerSocket(broker), {
    clientId: doctorClientId(config.terminal_id, process.pid),
    clean: true,
    protocolVersion: 4,
    reconnectPeriod: 0,
    connectTimeout: timeoutMs,
    ...(broker.username !== undefined ? { username: broker.username } : {}),
    ...(broker.password !== undefined ? { password: broker.password } : {}),
  });
  try {
    const started = Date.now();
    await new Promise<void>((resolve, reject) => {
      client.once('connect', () => resolve());
      client.once('error', reject);
      client.once('close', () =>
        reject(new Error('the broker closed the connection (unreachable, or TLS refused)')),
      );
    });
    return [
      {
        status: 'ok',
        title: `broker ${broker.url}: reachable, credentials accepted (${Date.now() - started} ms)`,
      },
    ];
  } catch (error) {
    return [
      {
        status: 'fail',
        title: `broker ${broker.url}`,
        detail: brokerHint(error as Error & { code?: unknown }),
      },
    ];
  } finally {
    await client.endAsync(true).catch(() => undefined);
  }
}

function brokerHint(error: Error & { code?: unknown }): string {
  const hints: Record<string, string> = {
    '4': 'check broker.username and broker.password (re-provision with tps terminal create --out FILE)',
    '5': 'the broker does not allow this credential here (terminal id, certificate)',
    ECONNREFUSED: 'nothing listens there: check broker.url (host and port) and the relay',
    ENOTFOUND: 'unknown host: check broker.url and DNS',
    ETIMEDOUT: 'no answer: a firewall, or the wrong host',
  };
  const hint = hints[String(error.code)];
  return hint ? `${error.message}\n${hint}` : error.message;
}

const withTimeout = <T>(promise: Promise<T>, ms: number): Promise<T> =>
  withDeadline(promise, ms, `timed out after ${ms} ms`);
