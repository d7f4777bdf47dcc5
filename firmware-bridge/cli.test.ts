/**
 * `tps bridge` as a person runs it: each command a process of its own
 * (`node --import tsx bin/tps.ts …`), the emulated reader on a real pty.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SerialCardReader } from './reader/serial-card-reader.js';
import { ReaderEventLog } from './reader/reader-events.js';
import { newTransactionId } from './reader/testing/readers-under-test.js';
import type { ProbeReport } from './tools/probe.js';
import { exited, killStarted, run, start } from './tools/testing/tps-process.js';
import { openPty, ptySupport } from './transport/pty.js';
import { openSerialPort } from './transport/serial-port.js';

const support = await ptySupport();
afterEach(killStarted);

/** Starts `tps bridge emulate …` and resolves with the device path it prints. */
async function emulate(args: string[]) {
  const started = await start(['bridge', 'emulate', ...args]);
  return { child: started.child, path: started.firstLine };
}

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
        const monitor = await start(['bridge', 'monitor', '--between', emulator.path, 'pty']);
        const hostSide = monitor.firstLine;
        const probe = await run(['bridge', 'probe', hostSide]);
        expect(probe.code).toBe(0);
        await new Promise((resolve) => setTimeout(resolve, 200));
        const out = monitor.output();
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
