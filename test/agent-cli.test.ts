/**
 * `tps agent` and `tps agent doctor` as a field engineer runs them: a config with
 * mistakes, a broker that refuses the credential, a reader on a serial device (the
 * emulated firmware on a pseudo-terminal).
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDoctor } from '../agent/doctor.js';
import { listenTcp } from '../firmware-bridge/emulator/zvt/terminal-server.js';
import { ZvtTerminalEmulator } from '../firmware-bridge/emulator/zvt/zvt-terminal.js';
import { CardReaderFirmware } from '../firmware-bridge/emulator/card-reader-firmware.js';
import { openPty, type PtyPair } from '../firmware-bridge/transport/pty.js';
import {
  TestRelay,
  startAedes,
  startCommand,
  tempDir,
  writeConfig,
  type TestBroker,
} from './agent-harness.js';
import { repoRoot as root, tpsArgv } from './support/tps-command.js';

function tps(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, tpsArgv(args), {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, stdout, stderr })));
}

async function doctor(file: string, now = new Date()) {
  const lines: string[] = [];
  const code = await runDoctor(file, {
    clock: { now: () => now },
    timeoutMs: 2000,
    write: (line) => lines.push(line),
  });
  return { code, text: lines.join('\n') };
}

describe('tps agent doctor', () => {
  let broker: TestBroker;
  let pty: PtyPair | undefined;
  let firmware: CardReaderFirmware;
  const base = (dir: string, overrides: object = {}) => ({
    terminal_id: 'T-doctor',
    broker: { url: broker.url, username: 'T-doctor', password: 'right-password' },
    reader: pty ? { port: pty.path } : { emulated: { state_file: 'reader.jsonl' } },
    data_dir: path.join(dir, 'data'),
    ...overrides,
  });

  beforeAll(async () => {
    broker = await startAedes();
    broker.users.set('T-doctor', 'right-password');
    pty = await openPty().catch(() => undefined);
    firmware = new CardReaderFirmware({ battery: { percentage: 64 } });
    if (pty) firmware.serve(pty.stream);
  });
  afterAll(async () => {
    await firmware.close();
    await pty?.close();
    await broker.stop();
  });

  it('passes every check on a good setup, and the reader answers', async () => {
    const dir = tempDir('doctor-ok');
    const { code, text } = await doctor(writeConfig(dir, base(dir)));
    expect(text).toContain('✓ config: terminal T-doctor');
    expect(text).toMatch(/✓ clock: \d{4}-/);
    expect(text).toContain('✓ journal:');
    expect(text).toContain(`✓ broker ${broker.url}: reachable, credentials accepted`);
    if (pty) expect(text).toMatch(/✓ card reader answers\n.*"battery_percentage":64/);
    expect(code).toBe(0);
  });

  it('names what is wrong: credential, reader port, clock', async () => {
    const dir = tempDir('doctor-bad');
    const file = writeConfig(
      dir,
      base(dir, {
        broker: { url: broker.url, username: 'T-doctor', password: 'wrong-password' },
        reader: { port: path.join(dir, 'no-such-tty') },
      }),
    );
    const { code, text } = await doctor(file, new Date('2001-01-01T00:00:00.000Z'));
    expect(text).toMatch(
      /✗ broker mqtt:\/\/127\.0\.0\.1:\d+\n.*Bad username or password\n.*check broker.username/,
    );
    expect(text).toMatch(/✗ card reader port .*no-such-tty: cannot open/);
    expect(text).toMatch(/✗ clock: 2001-01-01T00:00:00\.000Z \(UTC\)\n.*implausible/);
    expect(code).toBe(1);

    // --json: the same verdict as one JSON object, for a fleet tool to read.
    const lines: string[] = [];
    const json = await runDoctor(file, {
      clock: { now: () => new Date('2001-01-01T00:00:00.000Z') },
      timeoutMs: 2000,
      write: (line) => lines.push(line),
      json: true,
    });
    expect(json).toBe(1);
    expect(lines).toHaveLength(1);
    const report = JSON.parse(lines[0]!) as {
      config: string;
      checks: Array<{ status: string; title: string; detail?: string }>;
      failed: number;
    };
    expect(report.config).toBe(file);
    expect(report.checks.filter((c) => c.status === 'fail').length).toBe(report.failed);
    expect(report.checks).toContainEqual(
      expect.objectContaining({ status: 'fail', title: expect.stringMatching(/^clock: 2001-/) }),
    );
    expect(report.checks).toContainEqual(
      expect.objectContaining({
        status: 'fail',
        detail: expect.stringMatching(/Bad username or password/),
      }),
    );
  });

  it('probes a ZVT terminal with a status enquiry, and names a wrong password or address', async () => {
    const terminal = new ZvtTerminalEmulator({ password: '123456' });
    const listener = await listenTcp(terminal, { port: 0 });
    try {
      const zvt = (dir: string, reader: object) =>
        writeConfig(dir, base(dir, { reader: { protocol: 'zvt', ...reader } }));
      const address = `127.0.0.1:${listener.port}`;
      const good = await doctor(zvt(tempDir('doctor-zvt'), { tcp: address, password: '123456' }));
      expect(good.text).toContain(`✓ ZVT terminal tcp://${address}: opened`);
      expect(good.text).toMatch(/[✓!] ZVT terminal answers the status enquiry\n.*profile generic/);
      expect(good.code).toBe(0);
      const wrong = await doctor(zvt(tempDir('doctor-zvt-pwd'), { tcp: address }));
      expect(wrong.text).toMatch(/✗ ZVT terminal refuses the status enquiry\n.*reader\.password/);
      expect(wrong.code).toBe(1);
      await listener.close();
      const gone = await doctor(zvt(tempDir('doctor-zvt-gone'), { tcp: address }));
      expect(gone.text).toMatch(/✗ ZVT terminal tcp:\/\/127\.0\.0\.1:\d+: cannot open/);
    } finally {
      await listener.close();
      await terminal.close();
    }
  });

  it('lists every config problem and stops there', async () => {
    const dir = tempDir('doctor-config');
    const file = writeConfig(dir, {
      terminal_id: 'T doctor',
      broker: { url: 'http://x' },
      reader: {},
    });
    const { code, text } = await doctor(file);
    expect(text).toContain('✗ config');
    expect(text).toContain('terminal_id: must contain only 0-9, a-z, A-Z and hyphen');
    expect(text).toContain('broker.url: must be an mqtt:// or mqtts:// URL');
    expect(text).not.toContain('broker mqtt');
    expect(code).toBe(1);
  });

  it('the tps command: a bad config exits 2 with every problem; doctor exits with its verdict', async () => {
    const dir = tempDir('cli');
    const bad = writeConfig(dir, {
      terminal_id: 'T-1',
      broker: { url: 'mqtt://x' },
      reader: { port: '/dev/x' },
      heartbeat_s: 'often',
    });
    const [run, check] = await Promise.all([
      tps(['agent', '--config', bad]),
      tps(['agent', 'doctor', '--config', bad]),
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`invalid agent config ${bad}`);
    expect(run.stderr).toContain('heartbeat_s: Invalid input: expected number, received string');
    expect(run.stderr).toContain('broker.password: give broker.username and broker.password');
    expect(check.code).toBe(1);
    expect(check.stdout).toContain('✗ config');
  });
});

describe('tps agent', () => {
  it('runs with the emulated reader of its config, pays, and stops cleanly on SIGTERM', async () => {
    const broker = await startAedes();
    const relay = new TestRelay(broker.url);
    const dir = tempDir('agent-run');
    const file = writeConfig(dir, {
      terminal_id: 'T-run',
      broker: { url: broker.url, username: 'T-run', password: 'x' },
      reader: { emulated: { state_file: 'reader.jsonl', delay_ms: 10 } },
      data_dir: 'data',
      log_level: 'warn',
    });
    const child = spawn(process.execPath, tpsArgv(['agent', '--config', file]), {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) =>
      child.once('exit', (code) => resolve(code)),
    );
    try {
      await relay.until(
        () => relay.presence.some((p) => p.terminalId === 'T-run' && p.connected),
        15_000,
        `start\n${output}`,
      );
      relay.send('T-run', startCommand('tx-run'));
      await relay.until(() => relay.final('tx-run') !== undefined, 5000, `result\n${output}`);
      expect(relay.final('tx-run')).toMatchObject({ phase: 'COMPLETED', result_code: 'SUCCESS' });
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      await relay.until(() => relay.presence.at(-1)?.connected === false, 5000, 'offline presence');
      expect(output).toBe('');
    } finally {
      child.kill('SIGKILL');
      await relay.close();
      await broker.stop();
    }
  });
});
