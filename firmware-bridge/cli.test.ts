/**
 * `tps bridge` as a person runs it: each command a process of its own
 * (`node --import tsx bin/tps.ts …`), the emulated reader on a real pty.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { SerialCardReader } from './reader/serial-card-reader.js';
import { ReaderEventLog } from './reader/reader-events.js';
import { newTransactionId } from './reader/testing/readers-under-test.js';
import type { ProbeReport } from './tools/probe.js';
import { openPty, ptySupport } from './transport/pty.js';
import { openSerialPort } from './transport/serial-port.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const support = await ptySupport();

function tps(args: string[]): ChildProcess {
  return spawn(process.execPath, ['--import', 'tsx', path.join(root, 'bin/tps.ts'), ...args], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Runs a command to its end. */
async function run(
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = tps(args);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  return { code, stdout, stderr };
}

const running: ChildProcess[] = [];
afterEach(() => {
  for (const child of running.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
});

/** Starts `tps bridge emulate …` and resolves with the device path it prints. */
async function emulate(args: string[]): Promise<{ child: ChildProcess; path: string }> {
  const child = tps(['bridge', 'emulate', ...args]);
  running.push(child);
  let stdout = '';
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const devicePath = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const line = stdout.split('\n')[0];
      if (stdout.includes('\n') && line) resolve(line);
    });
    child.once('close', (code) => reject(new Error(`emulate exited ${code}: ${stderr}`)));
  });
  return { child, path: devicePath };
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.once('close', resolve);
  });

describe('tps bridge', () => {
  it('prints its usage, and refuses an unknown command with exit code 2', async () => {
    const help = await run(['bridge', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/emulate \[--state FILE\] \[--delay-ms N\]/);
    expect(help.stdout).toMatch(/monitor --between PORT_A PORT_B/);
    expect((await run(['bridge', 'frobnicate'])).code).toBe(2);
    const top = await run(['--help']);
    expect(top.stdout).toMatch(/bridge/);
  });

  describe.skipIf(!support.ok)(
    `on a pty${support.ok ? '' : `: SKIPPED, ${support.ok ? '' : support.reason}`}`,
    () => {
      it('emulate prints a device path; probe finds the reader there (exit 0); Ctrl-C stops it', async () => {
        const emulator = await emulate(['--delay-ms', '50']);
        expect(emulator.path).toMatch(/^\/dev\//);
        const probe = await run(['bridge', 'probe', emulator.path]);
        expect(probe.code).toBe(0);
        expect(probe.stdout).toContain(`card reader at ${emulator.path}`);
        expect(probe.stdout).toMatch(
          /answers\n\s+status:\s+battery 80 %, on battery, screen "Ready"/,
        );
        expect(probe.stdout).toMatch(/last transaction: none/);
        emulator.child.kill('SIGINT');
        expect(await exited(emulator.child)).toBe(0);
      });

      it('probe says NO ANSWER and exits 1 when nothing answers', async () => {
        const silent = await openPty();
        try {
          const probe = await run(['bridge', 'probe', silent.path, '--json']);
          expect(probe.code).toBe(1);
          const report = JSON.parse(probe.stdout) as ProbeReport;
          expect(report.ok).toBe(false);
          expect(report.errors.join('\n')).toMatch(/status: ACK_TIMEOUT/);
        } finally {
          await silent.close();
        }
      });

      it('emulate --state keeps the reader memory across a crash of the emulator', async () => {
        const state = path.join(mkdtempSync(path.join(tmpdir(), 'tps-emulate-')), 'reader.jsonl');
        const first = await emulate(['--state', state, '--delay-ms', '50']);
        const port = await openSerialPort(first.path);
        const reader = SerialCardReader.connect(port.stream);
        const events = new ReaderEventLog(reader);
        const id = newTransactionId('cli');
        await reader.start({
          transaction_id: id,
          kind: 'PURCHASE',
          requested_amount: 2222,
          currency: 'EUR',
          pause_on_customer_identified: false,
        });
        const result = await events.waitFor('result', (r) => r.transaction_id === id);
        await reader.close();
        await port.close();
        first.child.kill('SIGKILL');
        await exited(first.child);

        const second = await emulate(['--state', state]);
        const probe = await run(['bridge', 'probe', second.path, '--json']);
        expect(probe.code).toBe(0);
        const report = JSON.parse(probe.stdout) as ProbeReport;
        expect(report.lastTransaction).toMatchObject({
          transaction_id: id,
          phase: 'COMPLETED',
          result_code: 'SUCCESS',
          details: { reference: result.details?.reference },
        });
      });

      it('monitor --between forwards both ways and prints the frames of each direction', async () => {
        const emulator = await emulate(['--delay-ms', '50']);
        const monitor = tps(['bridge', 'monitor', '--between', emulator.path, 'pty']);
        running.push(monitor);
        let out = '';
        const hostSide = await new Promise<string>((resolve) => {
          monitor.stdout?.on('data', (chunk: Buffer) => {
            out += chunk.toString();
            const line = out.split('\n')[0];
            if (out.includes('\n') && line) resolve(line);
          });
        });
        const probe = await run(['bridge', 'probe', hostSide]);
        expect(probe.code).toBe(0);
        await new Promise((resolve) => setTimeout(resolve, 200));
        expect(out).toMatch(/host→reader\s+B→A\s+DATA #\d+ SYN\s+status\.query/);
        expect(out).toMatch(
          /reader→host\s+A→B\s+DATA #\d+.*status\.report \{.*"battery_percentage":80/,
        );
        expect(out).toMatch(/last_transaction\.answer \{.*"transaction":null/);
        expect(out).toMatch(/ACK\s+#\d+/);
      });
    },
  );
});
