/** The ZVT bench tools as functions, in process: monitor and probe over stream pairs and TCP. */
import net from 'node:net';
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { listenTcp, serveSerial } from '../emulator/zvt/terminal-server.js';
import { ZvtTerminalEmulator } from '../emulator/zvt/zvt-terminal.js';
import { createStreamPair } from '../serial/stream-pair.js';
import { fromHex } from '../zvt/apdu.js';
import { authorisation, CONFIG, registration } from '../zvt/command-builders.js';
import { frameApdu } from '../zvt/serial-frame-encoder.js';
import { ZvtSerialLink } from '../zvt/serial-link.js';
import { ZvtSession } from '../zvt/session.js';
import { connectZvtTcp } from '../zvt/tcp-channel.js';
import { PROPERTY } from '../zvt/testing/arbitraries.js';
import { apduText } from './zvt-frame-text.js';
import { monitorZvtBetween, monitorZvtPort, relayZvtTcp, ZvtLineTap } from './zvt-monitor.js';
import { probeZvtTerminal, zvtProbeText } from './zvt-probe.js';

const at = () => new Date(2025, 0, 1, 12, 0, 1, 250);
const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The emulated terminal on one end of a serial stream pair. */
function terminalOnSerial() {
  const terminal = new ZvtTerminalEmulator({ delayMs: 0 });
  cleanups.push(() => terminal.close());
  const line = createStreamPair();
  serveSerial(terminal, line.b);
  return { terminal, line };
}

const PRINTING =
  CONFIG.receiptsAsPrintLines | CONFIG.ecrPrintsPaymentReceipts | CONFIG.intermediateStatus;

describe('ZVT monitor', () => {
  it('sits between ECR and PT: names commands, BMPs, result codes, print lines and link bytes', async () => {
    const { line: ptLine } = terminalOnSerial();
    const ecrLine = createStreamPair();
    const lines: string[] = [];
    monitorZvtBetween(ptLine.a, ecrLine.b, {
      print: (l) => lines.push(l),
      now: at,
      names: ['P', 'E'],
    });
    const session = new ZvtSession(new ZvtSerialLink(ecrLine.a));
    await session.run(registration({ config: PRINTING }));
    await session.run(authorisation(1234));
    await session.run(authorisation(100006)); // declined by the issuer
    await session.close();
    const text = lines.join('\n');
    expect(lines[0]).toBe(
      '12:00:01.250  ecr→pt  E→P  06 00 registration  password 000000 config 8A currency 0978',
    );
    expect(text).toContain('pt→ecr  P→E  link ACK (06)');
    expect(text).toContain('pt→ecr  P→E  80 00 00 positive acknowledgement');
    expect(text).toContain('ecr→pt  E→P  06 01 authorisation  04 amount=1234');
    expect(text).toContain('pt→ecr  P→E  04 FF intermediate status  0A (insert card)');
    expect(text).toMatch(
      /pt→ecr {2}P→E {2}04 0F status information {2}27 result-code=00 \(no error\) 04 amount=1234 49 currency=978 .*87 receipt-number=1 29 terminal-id=29001001 8A card-type=0A/,
    );
    expect(text).toMatch(/ 22 pan=476173\*{6}0119 /);
    expect(text).toMatch(/pt→ecr {2}P→E {2}06 D1 print line {2}attr 00 "/);
    expect(text).toMatch(/06 D1 print line {2}attr 81 /);
    expect(text).toContain('06 0F completion');
    expect(text).toMatch(
      /04 0F status information {2}27 result-code=05 \(declined\) 04 amount=100006/,
    );
    expect(text).toContain('pt→ecr  P→E  06 1E abort  result 05 (declined)');
  });

  it('on one port, reports noise, half frames, bad CRCs and link NAKs, and reads what follows', async () => {
    const line = createStreamPair();
    const lines: string[] = [];
    monitorZvtPort(line.a, { print: (l) => lines.push(l), now: at });
    const good = frameApdu(fromHex('04 0F 02 27 6C'));
    const bad = Buffer.from(good);
    bad.writeUInt8((bad.at(-1) as number) ^ 0xff, bad.length - 1);
    line.b.write(fromHex('41 42 43'));
    line.b.write(fromHex('10 02 06 01 07 04'));
    line.b.write(bad);
    line.b.write(fromHex('15'));
    line.b.write(good);
    line.b.write(frameApdu(fromHex('84 6B 00')));
    // Manual card entry: track 2 and CVV are not printed.
    line.b.write(frameApdu(fromHex('06 01 11 04 00 00 00 00 01 00 23 F0 F4 47 61 73 D2 3A 12 3F')));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(lines.map((l) => l.slice(14))).toEqual([
      'peer    drop noise (3 bytes)',
      'peer    drop half frame (6 bytes)',
      'peer    bad frame (crc): the receiver should answer NAK',
      'peer    link NAK (15)',
      'pt→ecr  04 0F status information  27 result-code=6C (aborted)',
      'pt→ecr  84 6B 00 negative acknowledgement 6B (function deactivated (PT not registered))',
      'ecr→pt  06 01 authorisation  04 amount=100 23 track-2=(4 bytes, not shown) 3A cvv=(2 bytes, not shown)',
    ]);
  });

  it('takes any bytes without throwing: one well-formed line each, and a frame after noise without DLE is read', async () => {
    const line = /^12:00:01\.250 {2}(peer {2}|ecr→pt|pt→ecr) {2}\S.*$/;
    const minimal = frameApdu(fromHex('04 0F 02 27 00'));
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.uint8Array({ maxLength: 64 }), { maxLength: 6 }),
        fc.constantFrom<'serial' | 'tcp'>('serial', 'tcp'),
        async (chunks, framing) => {
          const lines: string[] = [];
          const tap = new ZvtLineTap({ print: (l) => lines.push(l), now: at, framing });
          for (const chunk of chunks) tap.write(Buffer.from(chunk));
          const clean = framing === 'serial' && chunks.every((chunk) => !chunk.includes(0x10));
          if (clean) tap.write(minimal);
          await new Promise((resolve) => setImmediate(resolve));
          for (const printed of lines) expect(printed).toMatch(line);
          if (clean) expect(lines.at(-1)).toMatch(/04 0F status information {2}27 result-code=00/);
        },
      ),
      PROPERTY,
    );
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 3, maxLength: 80 }), (bytes) => {
        const apdu = Buffer.from(bytes);
        apdu[2] = Math.min(apdu.length - 3, 0xfe); // a length that fits, so the data decodes
        expect(apduText(apdu).text).not.toContain('\n');
      }),
      PROPERTY,
    );
  });

  it('relays ZVT over TCP to the terminal and decodes both directions', async () => {
    const terminal = new ZvtTerminalEmulator({ delayMs: 0 });
    cleanups.push(() => terminal.close());
    const listener = await listenTcp(terminal, { port: 0 });
    cleanups.push(listener.close);
    const lines: string[] = [];
    const relay = await relayZvtTcp(
      { host: '127.0.0.1', port: 0 },
      { host: '127.0.0.1', port: listener.port },
      { print: (l) => lines.push(l), log: () => undefined, now: at },
    );
    cleanups.push(relay.close);
    const connection = await connectZvtTcp({ host: '127.0.0.1', port: relay.port });
    const report = await probeZvtTerminal(connection.channel, { register: true });
    await connection.close();
    expect(report.ok).toBe(true);
    await vi.waitFor(() => expect(lines).toHaveLength(8));
    expect(lines.map((l) => l.slice(14))).toEqual([
      'ecr→pt  B→A  06 00 registration  password 000000 config BE currency 0978',
      'pt→ecr  A→B  80 00 00 positive acknowledgement',
      'pt→ecr  A→B  06 0F completion  19 status-byte=00 29 terminal-id=29001001 49 currency=978',
      'ecr→pt  B→A  80 00 00 positive acknowledgement',
      'ecr→pt  B→A  05 01 status enquiry  password 000000',
      'pt→ecr  A→B  80 00 00 positive acknowledgement',
      'pt→ecr  A→B  06 0F completion  version "TPS-ZVT-EMULATOR-1.0" status 00 (PT ready)',
      'ecr→pt  B→A  80 00 00 positive acknowledgement',
    ]);
  });
});

describe('ZVT probe', () => {
  it('registers, enquires and reports for a person', async () => {
    const { line } = terminalOnSerial();
    const report = await probeZvtTerminal(new ZvtSerialLink(line.a), { register: true });
    expect(report).toEqual({
      ok: true,
      answered: true,
      errors: [],
      registration: { statusByte: 0, terminalId: '29001001', currency: 978 },
      status: {
        softwareVersion: 'TPS-ZVT-EMULATOR-1.0',
        terminalStatus: 0,
        terminalStatusText: '00 (PT ready)',
      },
    });
    expect(zvtProbeText('/dev/pts/9', report)).toBe(
      'ZVT terminal at /dev/pts/9 answers\n' +
        '  registration:    terminal id 29001001, currency 978, status byte 00 (nothing to do)\n' +
        '  terminal status: 00 (PT ready)\n' +
        '  software:        TPS-ZVT-EMULATOR-1.0\n',
    );
  });

  it('says the terminal refused a wrong password', async () => {
    const { line } = terminalOnSerial();
    const report = await probeZvtTerminal(new ZvtSerialLink(line.a), { password: '123456' });
    expect(report).toMatchObject({ ok: false, answered: true });
    expect(zvtProbeText('x', report)).toBe(
      'ZVT terminal at x: ANSWERS WITH AN ERROR\n' +
        '  error: status enquiry: REFUSED (84 83 (function not possible))\n',
    );
  });

  it('says what failed when nothing answers: no link ACK on serial, T3 on TCP', async () => {
    const line = createStreamPair();
    const serial = await probeZvtTerminal(
      new ZvtSerialLink(line.a, { ackTimeoutMs: 20, maxRetries: 1 }),
    );
    expect(serial).toMatchObject({ ok: false, answered: false });
    expect(serial.errors).toEqual([expect.stringMatching(/^status enquiry: NO_LINK_ACK /)]);
    expect(zvtProbeText('x', serial)).toMatch(/^ZVT terminal at x: NO ANSWER\n {2}error: /);

    // Reads and never answers, as a terminal that is not listening to ZVT.
    const silent = net.createServer((socket) => socket.resume());
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => silent.close(resolve)));
    const { port } = silent.address() as net.AddressInfo;
    const connection = await connectZvtTcp({ host: '127.0.0.1', port });
    cleanups.push(connection.close);
    const tcp = await probeZvtTerminal(connection.channel, { timeoutMs: 50, register: true });
    expect(tcp.errors).toEqual([expect.stringMatching(/^registration: T3_TIMEOUT /)]);
  });
});
