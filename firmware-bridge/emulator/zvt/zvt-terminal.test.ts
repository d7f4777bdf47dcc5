import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createStreamPair } from '../../serial/stream-pair.js';
import { openSerialPort } from '../../transport/serial-port.js';
import { openPty, ptySupport } from '../../transport/pty.js';
import { fromHex } from '../../zvt/apdu.js';
import { readTotals } from '../../zvt/bmp-values.js';
import {
  authorisation,
  CONFIG,
  endOfDay,
  refund,
  registration,
  repeatReceipt,
  reversal,
  statusEnquiry,
} from '../../zvt/command-builders.js';
import { ZvtSerialLink } from '../../zvt/serial-link.js';
import { ZvtSession } from '../../zvt/session.js';
import { connectZvtTcp } from '../../zvt/tcp-channel.js';
import { ScriptedPt } from '../../zvt/testing/scripted-pt.js';
import { listenTcp, serveSerial } from './terminal-server.js';
import { FileTerminalMemory } from './terminal-memory.js';
import { ZvtTerminalEmulator, type ZvtTerminalOptions } from './zvt-terminal.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The terminal on one end of a stream pair, an ECR session on the other. */
function onSerial(options: ZvtTerminalOptions = {}) {
  const terminal = new ZvtTerminalEmulator({ delayMs: 20, ...options });
  const pair = createStreamPair();
  serveSerial(terminal, pair.b);
  const session = new ZvtSession(new ZvtSerialLink(pair.a));
  cleanups.push(() => terminal.close());
  return { terminal, session, pair };
}

const support = await ptySupport();

/** The ECR prints every receipt and gets 04 FF. */
const PRINTING =
  CONFIG.receiptsAsPrintLines |
  CONFIG.ecrPrintsPaymentReceipts |
  CONFIG.ecrPrintsAdminReceipts |
  CONFIG.intermediateStatus;

describe('emulated ZVT terminal', () => {
  it('registers with its password and runs a payment with 04 FF, 04 0F, receipts and 06 0F', async () => {
    const { session, terminal } = onSerial();
    const statuses: number[] = [];
    session.on('intermediate-status', (message) => statuses.push(message.status));
    expect(await session.run(authorisation(1234))).toMatchObject({
      kind: 'refused',
      resultCode: 0x6b,
    });
    expect(await session.run(registration({ password: '123456' }))).toMatchObject({
      kind: 'refused',
      resultCode: 0x83,
    });
    const registered = await session.run(registration());
    expect(registered).toMatchObject({ kind: 'completed' });
    expect(registered.completion?.bmps.map((bmp) => bmp.tag)).toEqual([0x19, 0x29, 0x49]);
    expect(terminal.registration).toEqual({ config: 0xbe, tlv: false, currency: 978 });
    const paid = await session.run(authorisation(1234));
    expect(paid).toMatchObject({
      kind: 'completed',
      resultCode: 0,
      result: {
        amount: 1234,
        currency: 978,
        receiptNumber: 1,
        traceNumber: 1,
        terminalId: '29001001',
        cardType: 0x0a,
      },
    });
    expect(paid.result?.pan).toMatch(/^476173\*{6}0119$/);
    expect(statuses).toEqual([0x0a, 0x0e]);
    const lines = paid.printLines;
    expect(lines.length).toBeGreaterThan(10);
    expect(lines.filter((line) => line.attribute === 0x81)).toHaveLength(2);
    expect(lines.map((line) => line.text).join('\n')).toContain('MERCHANT COPY');
    expect(terminal.memory.last()).toMatchObject({
      kind: 'PAYMENT',
      phase: 'DONE',
      approved: true,
      amount: 1234,
    });
  });

  it('plays the trigger amounts as ZVT results, each with its 04 0F and 06 1E', async () => {
    const { session } = onSerial();
    await session.run(registration({ config: 0x00 }));
    const cases: [number, number][] = [
      [100003, 0x83],
      [100004, 0x6c],
      [100005, 0x66],
      [100006, 0x05],
      [100007, 0xff],
      [100008, 0x9b],
      [100009, 0xc5],
    ];
    for (const [amount, code] of cases) {
      const outcome = await session.run(authorisation(amount));
      expect(outcome, String(amount)).toMatchObject({
        kind: 'aborted',
        resultCode: code,
        result: { resultCode: code },
      });
      expect(outcome.printLines).toEqual([]);
    }
    expect(await session.run(authorisation(100002))).toMatchObject({
      kind: 'completed',
      resultCode: 0,
    });
    expect(await session.run(refund(500))).toMatchObject({
      kind: 'completed',
      result: { amount: 500 },
    });
  });

  it('aborts a payment waiting for the card on 06 B0', async () => {
    const { session } = onSerial({ delayMs: 60_000 });
    await session.run(registration());
    const running = session.run(authorisation(4321));
    await new Promise<void>((resolve) => session.once('intermediate-status', () => resolve()));
    expect(await session.abort()).toBe(true);
    expect(await running).toMatchObject({
      kind: 'aborted',
      resultCode: 0x6c,
      result: { resultCode: 0x6c, amount: 4321 },
    });
  });

  it('reverses by receipt number once, and closes the batch with totals at end-of-day', async () => {
    const { session } = onSerial();
    await session.run(registration({ config: PRINTING }));
    const visa = await session.run(authorisation(1000));
    const mastercard = await session.run(authorisation(100013));
    const other = await session.run(authorisation(700));
    expect(mastercard.result).toMatchObject({ cardType: 0x06, paymentType: 0x70 });
    const reversed = await session.run(reversal(other.result?.receiptNumber ?? 0));
    expect(reversed).toMatchObject({
      kind: 'completed',
      result: { amount: 700, receiptNumber: 4 },
    });
    expect(reversed.printLines.map((l) => l.text).join('\n')).toContain('REVERSAL');
    expect(await session.run(reversal(3))).toMatchObject({ kind: 'aborted', resultCode: 0xb4 });
    expect(await session.run(reversal(42))).toMatchObject({ kind: 'aborted', resultCode: 0xb5 });
    const closed = await session.run(endOfDay());
    expect(closed).toMatchObject({ kind: 'completed', result: { amount: 1000 + 100013 } });
    const bmp60 = closed.statusInformation[0]?.bmps.find((bmp) => bmp.tag === 0x60);
    const totals = bmp60?.format === 'binary' ? readTotals(bmp60.value) : undefined;
    expect(totals).toMatchObject({
      firstReceipt: visa.result?.receiptNumber,
      lastReceipt: mastercard.result?.receiptNumber,
      groups: {
        visa: { count: 1, total: 1000 },
        eurocard: { count: 1, total: 100013 },
        others: { count: 0 },
      },
    });
    expect(closed.printLines.map((l) => l.text).join('\n')).toContain('BATCH CLOSED');
    // A closed batch cannot be reversed; the next batch starts empty.
    expect(await session.run(reversal(1))).toMatchObject({ kind: 'aborted', resultCode: 0xb5 });
    expect((await session.run(endOfDay())).result).toMatchObject({ amount: 0 });
  });

  it('needs an end-of-day once its batch is hours old: status F0, payments end with F0, until closed', async () => {
    let now = Date.parse('2026-11-27T08:00:00.000Z');
    const { session } = onSerial({ endOfDayAfterHours: 24, now: () => new Date(now) });
    await session.run(registration({ config: PRINTING }));
    expect(await session.run(authorisation(500))).toMatchObject({ kind: 'completed' });
    now += 23 * 3_600_000;
    expect((await session.run(statusEnquiry())).completion?.status?.terminalStatus).toBe(0);
    now += 3_600_000;
    expect((await session.run(statusEnquiry())).completion?.status?.terminalStatus).toBe(0xf0);
    expect(await session.run(authorisation(600))).toMatchObject({
      kind: 'aborted',
      resultCode: 0xf0,
    });
    expect(await session.run(endOfDay())).toMatchObject({
      kind: 'completed',
      result: { amount: 500 },
    });
    expect((await session.run(statusEnquiry())).completion?.status?.terminalStatus).toBe(0);
    expect(await session.run(authorisation(700))).toMatchObject({ kind: 'completed' });
  });

  it('fails as many end-of-days as told with A0, the batch left open', async () => {
    const { session, terminal } = onSerial({ endOfDayFailures: 1 });
    await session.run(registration({ config: PRINTING }));
    await session.run(authorisation(800));
    expect(await session.run(endOfDay())).toMatchObject({ kind: 'aborted', resultCode: 0xa0 });
    expect((await session.run(endOfDay())).result).toMatchObject({ amount: 800 });
    terminal.failEndOfDays(1);
    expect(await session.run(endOfDay())).toMatchObject({ kind: 'aborted', resultCode: 0xa0 });
  });

  it('repeats the last receipt, with its 04 0F on service byte 01, and answers status enquiries', async () => {
    const { session } = onSerial();
    await session.run(registration({ config: PRINTING }));
    const paid = await session.run(authorisation(2500));
    const repeated = await session.run(repeatReceipt({ serviceByte: 0x01 }));
    expect(repeated.statusInformation).toEqual(paid.statusInformation);
    expect(repeated.printLines).toEqual(paid.printLines);
    expect((await session.run(repeatReceipt({ serviceByte: 0x02 }))).printLines).toEqual([]);
    expect(await session.run(statusEnquiry())).toMatchObject({
      completion: { status: { softwareVersion: 'TPS-ZVT-EMULATOR-1.0', terminalStatus: 0 } },
    });
  });

  it('refuses what it cannot run: undecodable, unknown, busy', async () => {
    const terminal = new ZvtTerminalEmulator({ delayMs: 60_000, requireRegistration: false });
    cleanups.push(() => terminal.close());
    const pair = createStreamPair();
    serveSerial(terminal, pair.b);
    const ecr = new ScriptedPt(new ZvtSerialLink(pair.a));
    await ecr.tell('06 01 03 04 00 00', '84 9A 00');
    await ecr.tell('06 93 03 00 00 00', '84 83 00');
    await ecr.tell('06 01 07 04 00 00 00 00 10 00', '80 00 00');
    await ecr.tell('06 50 03 00 00 00', '84 83 00');
  });

  it('keeps its journal on disk: an interrupted payment is recorded as aborted after a crash', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'zvt-terminal-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = path.join(dir, 'journal.jsonl');
    const first = new ZvtTerminalEmulator({ memory: new FileTerminalMemory(file), delayMs: 20 });
    const pair = createStreamPair();
    serveSerial(first, pair.b);
    const session = new ZvtSession(new ZvtSerialLink(pair.a));
    await session.run(registration({ config: PRINTING }));
    const paid = await session.run(authorisation(990));
    const running = session.run(authorisation(100020)).catch(() => undefined); // 30 s
    await new Promise<void>((resolve) => session.once('intermediate-status', () => resolve()));
    await first.close(); // the power goes…
    pair.a.destroy(); // …and with it the line
    await running;

    const second = new ZvtTerminalEmulator({ memory: new FileTerminalMemory(file), delayMs: 20 });
    cleanups.push(() => second.close());
    expect(second.memory.all().map((e) => [e.seq, e.phase, e.result_code, e.approved])).toEqual([
      [1, 'DONE', 0, true],
      [2, 'DONE', 0x6c, false],
    ]);
    const again = createStreamPair();
    serveSerial(second, again.b);
    const ecr = new ZvtSession(new ZvtSerialLink(again.a));
    await ecr.run(registration({ config: PRINTING }));
    const last = await ecr.run(repeatReceipt({ serviceByte: 0x01 }));
    expect(last.result).toMatchObject({ resultCode: 0x6c, amount: 100020, receiptNumber: 2 });
    expect(await ecr.run(reversal(paid.result?.receiptNumber ?? 0))).toMatchObject({
      kind: 'completed',
      result: { receiptNumber: 3 },
    });
  });

  it('serves ECRs over TCP, one connection after another', async () => {
    const terminal = new ZvtTerminalEmulator({ delayMs: 20 });
    cleanups.push(() => terminal.close());
    const listener = await listenTcp(terminal, { port: 0 });
    cleanups.push(listener.close);
    for (const amount of [111, 222]) {
      const connection = await connectZvtTcp({ host: '127.0.0.1', port: listener.port });
      const session = new ZvtSession(connection.channel);
      expect(await session.run(registration())).toMatchObject({ kind: 'completed' });
      expect(await session.run(authorisation(amount))).toMatchObject({
        kind: 'completed',
        result: { amount },
      });
      await connection.close();
    }
    expect(terminal.memory.all().map((e) => e.amount)).toEqual([111, 222]);
  });

  it.skipIf(!support.ok)(
    `keeps serving a pty when the ECR closes and reopens it${support.ok ? '' : ` (SKIPPED: ${support.reason})`}`,
    async () => {
      const terminal = new ZvtTerminalEmulator({ delayMs: 20 });
      cleanups.push(() => terminal.close());
      const pty = await openPty();
      cleanups.push(() => pty.close());
      serveSerial(terminal, pty.stream);
      for (let round = 0; round < 2; round++) {
        const port = await openSerialPort(pty.path);
        const link = new ZvtSerialLink(port.stream);
        const session = new ZvtSession(link);
        expect(await session.run(statusEnquiry())).toMatchObject({ kind: 'completed' });
        // Leave a half frame behind, as an ECR closing mid-write would.
        port.stream.write(fromHex('10 02 06 01 07 04'));
        await link.close();
        await port.close();
      }
    },
  );
});
