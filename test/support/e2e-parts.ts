/**
 * What the end-to-end tests (test/e2e-*.test.ts) share: real parts as child processes
 * (`tps agent`, `tps bridge emulate`, any `tps` command) with their output kept for the
 * failure message, a terminal registered through /terminal/create with its agent config
 * written as `tps terminal create` writes it, a POS bound to it, free ports, polling, and
 * the emulated reader's memory file read back as the reader's own record.
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import Database from 'better-sqlite3';
import { parseMemoryFile } from '../../firmware-bridge/emulator/file-reader-memory.js';
import type { ReaderRecord } from '../../firmware-bridge/emulator/reader-memory.js';
import { TerminalCreateResponse } from '../../protocol/api.js';
import { post, type ApiResponse } from './relay.js';
import { spawnTps } from './relay-process.js';

export type Credential = { username: string; password: string };

/** A `tps` child process, its output kept (the last 64 KB) for failure messages. */
export interface TpsChild {
  child: ChildProcess;
  output(): string;
  /** Whether it is still running. */
  readonly running: boolean;
  /** Sends `signal` (default SIGTERM; SIGKILL after 5 s) and resolves once it exited. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export function runTps(args: string[], env: Record<string, string> = {}): TpsChild {
  const child = spawnTps(args, env);
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-65_536);
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const running = () => child.exitCode === null && child.signalCode === null;
  return {
    child,
    output: () => output,
    get running() {
      return running();
    },
    async stop(signal = 'SIGTERM') {
      if (!running()) return;
      child.kill(signal);
      const timer = setTimeout(() => {
        if (running()) child.kill('SIGKILL');
      }, 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** `tps cloud` as a child process, on the addresses `env` gives (TPS_PORT etc.). */
export interface RelayChild extends TpsChild {
  /** e.g. http://127.0.0.1:41234/pos */
  baseUrl: string;
}

/**
 * Starts `tps cloud` and waits for its banner, as support/relay-process.ts does, but a
 * relay that does not come up is killed rather than left running: one that cannot listen
 * does not exit by itself (see e2e-relay-start.test.ts).
 */
export async function startRelayChild(env: Record<string, string>): Promise<RelayChild> {
  const relay = runTps(['cloud'], {
    TPS_HOST: '127.0.0.1',
    TPS_PORT: '0',
    TPS_MQTT_PORT: '0',
    ...env,
  });
  try {
    const baseUrl = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`the relay did not start:\n${relay.output()}`)),
        20_000,
      );
      const look = () => {
        const match = /listening on (https?:\/\/\S+?\/pos)\//.exec(relay.output());
        if (match?.[1]) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      };
      relay.child.stderr!.on('data', look);
      relay.child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`the relay exited with ${code}:\n${relay.output()}`));
      });
    });
    return Object.assign(relay, { baseUrl });
  } catch (error) {
    await relay.stop('SIGKILL');
    throw error;
  }
}

/** Runs a `tps` command to its end; answers its exit code and output. */
export async function runTpsToEnd(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawnTps(args, env);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, stdout, stderr };
}

/** `tps bridge emulate`: the emulated card reader on a new pty, in its own process. */
export async function startEmulatorProcess(
  args: string[],
): Promise<TpsChild & { devicePath: string }> {
  const emulator = runTps(['bridge', 'emulate', ...args]);
  try {
    const devicePath = await new Promise<string>((resolve, reject) => {
      let stdout = '';
      const timer = setTimeout(
        () => reject(new Error(`tps bridge emulate printed no path:\n${emulator.output()}`)),
        20_000,
      );
      emulator.child.stdout!.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
        const line = stdout.split('\n')[0];
        if (stdout.includes('\n') && line) {
          clearTimeout(timer);
          resolve(line.trim());
        }
      });
      emulator.child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`tps bridge emulate exited with ${code}:\n${emulator.output()}`));
      });
    });
    return Object.assign(emulator, { devicePath });
  } catch (error) {
    await emulator.stop('SIGKILL');
    throw error;
  }
}

/**
 * TCP ports free at the time of asking, all different (each held until all are found), for
 * a process that must get the same ones again after a restart.
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers: net.Server[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const server = net.createServer();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => resolve());
      });
    }
    return servers.map((server) => (server.address() as net.AddressInfo).port);
  } finally {
    await Promise.all(
      servers.map((server) => new Promise<void>((resolve) => server.close(() => resolve()))),
    );
  }
}

/** POST /terminal/create with the account credential: the POS and agent credentials. */
export async function registerTerminal(
  baseUrl: string,
  account: Credential,
  capabilities: { printer?: boolean; battery?: boolean } = {},
): Promise<TerminalCreateResponse> {
  const res = await post(baseUrl, 'v1', '/terminal/create', capabilities, account);
  if (res.status !== 200) {
    throw new Error(`/terminal/create answered ${res.status}: ${JSON.stringify(res.body)}`);
  }
  return TerminalCreateResponse.parse(res.body);
}

/**
 * The agent's config file, as `tps terminal create --out FILE` writes it (cloud/cli.ts),
 * plus what a bench needs: its own data_dir, a log level. Relative paths are taken from
 * the file's directory.
 */
export function writeAgentConfig(
  dir: string,
  terminal: TerminalCreateResponse,
  fields: {
    reader: Record<string, unknown>;
    printer?: Record<string, unknown>;
    broker?: Partial<{ url: string; username: string; password: string }>;
    heartbeat_s?: number;
  },
): string {
  const file = path.join(dir, 'agent.json');
  const config = {
    terminal_id: terminal.terminal_id,
    broker: {
      url: terminal.agent.broker_url,
      username: terminal.agent.username,
      password: terminal.agent.password,
      ...fields.broker,
    },
    reader: fields.reader,
    printer: fields.printer ?? { type: 'none' },
    ...(fields.heartbeat_s !== undefined ? { heartbeat_s: fields.heartbeat_s } : {}),
    data_dir: 'agent-data',
    log_level: process.env.TEST_LOG ? 'debug' : 'warn',
  };
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  return file;
}

/** `tps agent --config FILE` as a child process. */
export function startAgentProcess(configFile: string): TpsChild {
  return runTps(['agent', '--config', configFile]);
}

/** A POS bound to one terminal; `baseUrl` is read at each call (a restarted relay). */
export function posFor(baseUrl: () => string, terminal: { terminal_id: string } & Credential) {
  const credential = { username: terminal.username, password: terminal.password };
  return (operation: string, body: Record<string, unknown>): Promise<ApiResponse> =>
    post(baseUrl(), 'v1', operation, { terminal_id: terminal.terminal_id, ...body }, credential);
}

/**
 * Reads `read()` until `done` holds; answers the last value, or throws after `ms` with
 * `what` and the last value (and `context()`, e.g. a child's output).
 */
export async function eventually<T>(
  read: () => Promise<T> | T,
  done: (value: T) => boolean,
  options: { ms?: number; every?: number; what?: string; context?: () => string } = {},
): Promise<T> {
  const deadline = Date.now() + (options.ms ?? 10_000);
  let last: T | undefined;
  let lastError: unknown;
  for (;;) {
    try {
      last = await read();
      if (done(last)) return last;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      const seen = lastError ? `; last error ${String(lastError)}` : '';
      throw new Error(
        `timed out waiting for ${options.what ?? 'a condition'}; last value ${JSON.stringify(last)}${seen}` +
          (options.context ? `\n${options.context()}` : ''),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, options.every ?? 50));
  }
}

/**
 * Every line of the reader's memory file, in write order (a transaction's later lines
 * replace its earlier ones in the reader's view; here all are kept, to count runs).
 */
export function readerLines(stateFile: string): ReaderRecord[] {
  return existsSync(stateFile) ? parseMemoryFile(stateFile) : [];
}

/** The reader's current record of one transaction (its last line), if any. */
export function readerRecord(stateFile: string, transactionId: string): ReaderRecord | undefined {
  return readerLines(stateFile)
    .filter((r) => r.transaction_id === transactionId)
    .at(-1);
}

/**
 * The reader's runs of one transaction: the distinct sequence numbers it gave it (0 is a
 * refusal, not a run). More than one would be a second charge.
 */
export function readerRuns(stateFile: string, transactionId: string): number[] {
  return [
    ...new Set(
      readerLines(stateFile)
        .filter((r) => r.transaction_id === transactionId && r.sequence > 0)
        .map((r) => r.sequence),
    ),
  ];
}

/** The raw text of a file, for failure messages. */
export function fileText(file: string): string {
  return existsSync(file) ? readFileSync(file, 'utf8') : `(${file} does not exist)`;
}

/**
 * For failure messages: what the agent's journal (`<dataDir>/agent.sqlite`) says of each
 * transaction, and which reports still wait in its outbox. Read-only; never throws.
 */
export function agentJournalText(dataDir: string): string {
  const file = path.join(dataDir, 'agent.sqlite');
  if (!existsSync(file)) return `(no journal at ${file})`;
  try {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      const transactions = db
        .prepare('SELECT transaction_id, state, result_code FROM transactions')
        .all();
      const outbox = db.prepare('SELECT seq, type FROM outbox ORDER BY seq').all();
      const last = db.prepare("SELECT seq FROM sqlite_sequence WHERE name = 'outbox'").get();
      return (
        `agent journal: transactions ${JSON.stringify(transactions)}; ` +
        `outbox waiting ${JSON.stringify(outbox)}; last seq ${JSON.stringify(last ?? null)}`
      );
    } finally {
      db.close();
    }
  } catch (error) {
    return `(journal not readable: ${String(error)})`;
  }
}
