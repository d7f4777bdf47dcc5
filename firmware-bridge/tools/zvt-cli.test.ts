/**
 * `tps bridge … --protocol zvt` as a person runs it: each command a process of its own, the
 * emulated ZVT terminal on a real pty or a real TCP port.
 */
import { mkdtempSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openPty, ptySupport } from '../transport/pty.js';
import { openSerialPort } from '../transport/serial-port.js';
import { authorisation, registration, repeatReceipt } from '../zvt/command-builders.js';
import { ZvtSerialLink } from '../zvt/serial-link.js';
import { ZvtSession } from '../zvt/session.js';
import { connectZvtTcp } from '../zvt/tcp-channel.js';
import { exited, killStarted, run, start } from './testing/tps-process.js';
import type { ZvtProbeReport } from './zvt-probe.js';

const support = await ptySupport();
afterEach(killStarted);

const emulateZvt = (args: string[]) => start(['bridge', 'emulate', '--protocol', 'zvt', ...args]);
const probeZvt = (args: string[]) => run(['bridge', 'probe', '--protocol', 'zvt', ...args]);

/** A TCP port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Runs a purchase over ZVT TCP; resolves with its receipt number. */
async function payOverTcp(address: string, amount: number): Promise<number | undefined> {
  const [host, port] = address.replace('tcp://', '').split(':') as [string, string];
  const connection = await connectZvtTcp({ host, port: Number(port) });
  const session = new ZvtSession(connection.channel);
  try {
    await session.run(registration());
    const paid = await session.run(authorisation(amount));
    expect(paid).toMatchObject({ kind: 'completed', resultCode: 0 });
    return paid.result?.receiptNumber;
  } finally {
    await connection.close();
  }
}

describe('tps bridge --protocol zvt', () => {
  it('lists the ZVT tools in its usage and refuses an unknown protocol', async () => {
    const help = await run(['bridge', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/emulate --protocol zvt .*--password P/s);
    expect(help.stdout).toMatch(/monitor --protocol zvt --between PORT_A PORT_B\|pty/);
    expect(help.stdout).toMatch(/probe --protocol zvt PORT\|tcp:\/\/HOST:PORT \[--register\]/);
    const wrong = await run(['bridge', 'probe', '--protocol', 'opi', '/dev/null']);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toMatch(
      /^tps bridge probe: --protocol is native or zvt, not 'opi'\n\nUsage: tps bridge/,
    );
  });

  it('emulate --tcp listens and says where; probe --register finds the terminal there; Ctrl-C stops it', async () => {
    const emulator = await emulateZvt(['--tcp', '127.0.0.1:0', '--delay-ms', '50']);
    expect(emulator.firstLine).toMatch(/^tcp:\/\/127\.0\.0\.1:\d+$/);
    const probe = await probeZvt([emulator.firstLine, '--register']);
    expect(probe.code).toBe(0);
    expect(probe.stdout).toBe(
      `ZVT terminal at ${emulator.firstLine} answers\n` +
        '  registration:    terminal id 29001001, currency 978, status byte 00 (nothing to do)\n' +
        '  terminal status: 00 (PT ready)\n' +
        '  software:        TPS-ZVT-EMULATOR-1.0\n',
    );
    emulator.child.kill('SIGINT');
    expect(await exited(emulator.child)).toBe(0);
  });

  it('probe exits 1 with a clear error when no terminal listens on the TCP port', async () => {
    const probe = await probeZvt([`tcp://127.0.0.1:${await closedPort()}`, '--json']);
    expect(probe.code).toBe(1);
    expect(probe.stderr).toMatch(
      /^tps bridge probe: cannot connect to tcp:\/\/127\.0\.0\.1:\d+: .*ECONNREFUSED/,
    );
  });

  it('emulate --password: the terminal refuses another password, and probe says so (exit 1)', async () => {
    const emulator = await emulateZvt(['--tcp', '127.0.0.1:0', '--password', '123456']);
    const refused = await probeZvt([emulator.firstLine, '--json']);
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout)).toMatchObject({
      ok: false,
      answered: true,
      errors: ['status enquiry: REFUSED (84 83 (function not possible))'],
    });
    expect((await probeZvt([emulator.firstLine, '--password', '123456'])).code).toBe(0);
    const bad = await emulateZvt(['--password', '12ab']).catch((error: Error) => error);
    expect(String(bad)).toMatch(/--password is 6 digits, not '12ab'/);
  });

  it('emulate --state keeps the terminal journal across a crash of the emulator', async () => {
    const state = path.join(mkdtempSync(path.join(tmpdir(), 'tps-zvt-')), 'terminal.jsonl');
    const first = await emulateZvt(['--tcp', '127.0.0.1:0', '--state', state, '--delay-ms', '0']);
    const receipt = await payOverTcp(first.firstLine, 4321);
    first.child.kill('SIGKILL');
    await exited(first.child);

    const second = await emulateZvt(['--tcp', '127.0.0.1:0', '--state', state]);
    const [host, port] = second.firstLine.replace('tcp://', '').split(':') as [string, string];
    const connection = await connectZvtTcp({ host, port: Number(port) });
    const session = new ZvtSession(connection.channel);
    await session.run(registration());
    const last = await session.run(repeatReceipt({ serviceByte: 0x01 }));
    await connection.close();
    expect(last.result).toMatchObject({ resultCode: 0, amount: 4321, receiptNumber: receipt });
  });

  describe.skipIf(!support.ok)(
    `on a pty${support.ok ? '' : `: SKIPPED, ${support.ok ? '' : support.reason}`}`,
    () => {
      it('emulate prints a device path and keeps serving as ECRs close and reopen it', async () => {
        const emulator = await emulateZvt(['--delay-ms', '0']);
        expect(emulator.firstLine).toMatch(/^\/dev\//);
        const probe = await probeZvt([emulator.firstLine]);
        expect(probe.code).toBe(0);
        expect(probe.stdout).toMatch(
          /^ZVT terminal at \/dev\/\S+ \(9600 baud, 2 stop bits\) answers\n/,
        );
        // Another ECR opens the same path after the probe closed it, and pays.
        const port = await openSerialPort(emulator.firstLine, { baudRate: 9600, stopBits: 2 });
        const session = new ZvtSession(new ZvtSerialLink(port.stream));
        await session.run(registration());
        expect(await session.run(authorisation(1250))).toMatchObject({
          kind: 'completed',
          result: { amount: 1250, receiptNumber: 1 },
        });
        await session.close();
        await port.close();
        const again = await probeZvt([emulator.firstLine, '--register', '--json']);
        expect(again.code).toBe(0);
        expect((JSON.parse(again.stdout) as ZvtProbeReport).registration).toEqual({
          statusByte: 0,
          terminalId: '29001001',
          currency: 978,
        });
        expect(emulator.errors()).toMatch(/receipt 0001 PAYMENT DONE 00 \(no error\) amount 1250/);
        emulator.child.kill('SIGINT');
        expect(await exited(emulator.child)).toBe(0);
      });

      it('probe says NO ANSWER and exits 1 when nothing answers on the line', async () => {
        const silent = await openPty();
        try {
          const probe = await probeZvt([silent.path, '--register']);
          expect(probe.code).toBe(1);
          expect(probe.stdout).toMatch(
            /^ZVT terminal at \S+ \(9600 baud, 2 stop bits\): NO ANSWER\n {2}error: registration: NO_LINK_ACK \(the peer did not acknowledge the frame after 3 sends/,
          );
        } finally {
          await silent.close();
        }
      });

      it('monitor --between forwards both ways and decodes each direction', async () => {
        const emulator = await emulateZvt(['--delay-ms', '0']);
        const monitor = await start([
          'bridge',
          'monitor',
          '--protocol',
          'zvt',
          '--between',
          emulator.firstLine,
          'pty',
        ]);
        const probe = await probeZvt([monitor.firstLine, '--register']);
        expect(probe.code).toBe(0);
        await expect
          .poll(monitor.output)
          .toMatch(/pt→ecr\s+A→B\s+06 0F completion\s+version "TPS-ZVT-EMULATOR-1\.0" status 00/);
        const out = monitor.output();
        expect(out).toMatch(/ecr→pt\s+B→A\s+06 00 registration\s+password 000000 config BE/);
        expect(out).toMatch(/pt→ecr\s+A→B\s+link ACK \(06\)/);
        expect(out).toMatch(
          /pt→ecr\s+A→B\s+06 0F completion\s+19 status-byte=00 29 terminal-id=29001001/,
        );
        expect(out).toMatch(/ecr→pt\s+B→A\s+05 01 status enquiry/);
      });
    },
  );

  it('monitor --between tcp://… listen:… relays ZVT over TCP and decodes it', async () => {
    const emulator = await emulateZvt(['--tcp', '127.0.0.1:0']);
    const monitor = await start([
      'bridge',
      'monitor',
      '--protocol',
      'zvt',
      '--between',
      emulator.firstLine,
      'listen:127.0.0.1:0',
    ]);
    expect(monitor.firstLine).toMatch(/^tcp:\/\/127\.0\.0\.1:\d+$/);
    expect((await probeZvt([monitor.firstLine])).code).toBe(0);
    await expect.poll(monitor.output).toMatch(/pt→ecr\s+A→B\s+06 0F completion\s+version/);
    expect(monitor.output()).toMatch(/ecr→pt\s+B→A\s+05 01 status enquiry\s+password 000000/);
  });
});
