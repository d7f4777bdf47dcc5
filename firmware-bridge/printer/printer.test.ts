import { describe, expect, it } from 'vitest';
import { createStreamPair, type StreamPairOptions } from '../serial/stream-pair.js';
import { ManualTimers } from '../../common/testing/manual-timers.js';
import { EmulatedPrinter, type EmulatedPrinterOptions } from './emulated-printer.js';
import { parseCommand } from './escpos-parser.js';
import { PrinterError } from './errors.js';
import { pngToRaster } from './png-raster.js';
import { ReceiptPrinter, type ReceiptPrinterOptions } from './printer.js';
import { checkerboard, driveTimers, receiptLike, settle } from './testing/images.js';

function setup(
  options: ReceiptPrinterOptions = {},
  device: EmulatedPrinterOptions = {},
  line: StreamPairOptions = {},
) {
  const pair = createStreamPair(line);
  const emulated = new EmulatedPrinter({ headWidth: options.headWidth ?? 384, ...device });
  emulated.attach(pair.b);
  const printer = new ReceiptPrinter(pair.a, {
    pollIntervalMs: 5,
    statusTimeoutMs: 500,
    ...options,
  });
  return { pair, emulated, printer };
}

async function rejection(promise: Promise<unknown>): Promise<PrinterError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(PrinterError);
    return error as PrinterError;
  }
  throw new Error('expected a PrinterError');
}

describe('ReceiptPrinter against the emulated printer', () => {
  it('prints a PNG: the printer holds exactly the thresholded raster', async () => {
    const { emulated, printer } = setup();
    const png = receiptLike(300, 500);
    const result = await printer.print(png);
    expect(emulated.jobs).toHaveLength(1);
    expect(emulated.jobs[0]!.raster).toEqual(pngToRaster(png));
    expect(emulated.jobs[0]).toMatchObject({ cut: 'partial', bands: 2, feedLines: 4 });
    expect(result).toMatchObject({ width: 384, rows: 500, bands: 2, bytes: 24_024 });
    expect(result.status).toMatchObject({ online: true, paperOut: false, paperNearEnd: false });
    expect(printer.strayBytes).toBe(0);
  });

  it('prints at 576 dots, dithered, in small bands, over a line that splits every write', async () => {
    const { emulated, printer } = setup(
      { headWidth: 576, dither: true, bandRows: 24, cut: 'full' },
      {},
      { aToB: { maxChunk: 700 }, bToA: { maxChunk: 1 } },
    );
    const png = receiptLike(800, 300);
    await printer.print(png);
    const job = emulated.jobs[0]!;
    expect(job.raster).toEqual(pngToRaster(png, { headWidth: 576, dither: true }));
    expect(job).toMatchObject({ cut: 'full', bands: Math.ceil(job.raster.height / 24) });
  });

  it('queues calls: two prints and a status, one after the other', async () => {
    const { emulated, printer } = setup();
    const a = printer.print(checkerboard(16, 2));
    const b = printer.print(checkerboard(8, 8));
    const status = printer.status();
    await Promise.all([a, b, status]);
    expect(emulated.jobs.map((j) => j.raster.height)).toEqual([2, 8]);
  });

  it('reports paper out before sending: PAPER_OUT, jobSent false, nothing sent', async () => {
    const { emulated, printer } = setup();
    emulated.setPaperOut(true);
    const error = await rejection(printer.print(checkerboard(16, 2)));
    expect(error).toMatchObject({ code: 'PAPER_OUT', jobSent: false, disconnected: false });
    expect(error.status).toMatchObject({ online: false, paperOut: true });
    expect(emulated.counts.init).toBe(0);
    emulated.setPaperOut(false);
    await printer.print(checkerboard(16, 2));
    expect(emulated.jobs).toHaveLength(1);
  });

  it('reports a cover open and a cutter jam', async () => {
    const { emulated, printer } = setup();
    emulated.setCoverOpen(true);
    expect(await rejection(printer.print(checkerboard(16, 2)))).toMatchObject({
      code: 'COVER_OPEN',
      jobSent: false,
    });
    emulated.setCoverOpen(false);
    emulated.setFault('autocutter');
    const jam = await rejection(printer.status().then(() => printer.print(checkerboard(16, 2))));
    expect(jam).toMatchObject({ code: 'OFFLINE', status: { error: true, autocutterError: true } });
  });

  it('reports paper running out mid-job: PAPER_OUT, jobSent true; the job ends after a reload', async () => {
    const { emulated, printer } = setup({ bandRows: 24 }, { paperRows: 50 });
    const error = await rejection(printer.print(receiptLike(384, 200)));
    expect(error).toMatchObject({ code: 'PAPER_OUT', jobSent: true, status: { paperOut: true } });
    expect(emulated.jobs).toHaveLength(0);
    const job = emulated.nextJob();
    emulated.loadPaper();
    expect((await job).raster.height).toBeGreaterThan(50);
  });

  it('resolves with a near-end warning in the status', async () => {
    const { emulated, printer } = setup();
    emulated.setNearEnd(true);
    const result = await printer.print(checkerboard(16, 2));
    expect(result.status).toMatchObject({ paperNearEnd: true, paperOut: false });
  });

  it('refuses an invalid PNG before writing anything', async () => {
    const { emulated, printer, pair } = setup();
    const error = await rejection(printer.print(Buffer.from('not a png')));
    expect(error).toMatchObject({ code: 'INVALID_IMAGE', jobSent: false });
    await pair.idle();
    expect(pair.stats.aToB.bytesWritten).toBe(0);
    expect(emulated.counts.realtimeStatus).toBe(0);
  });

  it('ignores bytes that answer nothing (XON, XOFF, noise)', async () => {
    const { pair, printer } = setup();
    pair.b.write(Buffer.from([0x11, 0x13, 0x11]));
    await settle();
    const status = await printer.status();
    expect(status.online).toBe(true);
    expect(printer.strayBytes).toBe(3);
  });

  it("with confirm 'sent', queries once after writing; with 'none', never", async () => {
    const sent = setup({ confirm: 'sent' }, { answersTransmitStatus: false });
    expect((await sent.printer.print(checkerboard(16, 2))).status?.online).toBe(true);
    expect(sent.emulated.counts.realtimeStatus).toBe(6); // 3 before, 3 after
    const none = setup({ confirm: 'none' }, { answersRealtimeStatus: false });
    const result = await none.printer.print(checkerboard(16, 2));
    expect(result.status).toBeUndefined();
    await none.pair.idle();
    expect(none.emulated.jobs).toHaveLength(1);
  });
});

describe('ReceiptPrinter and a printer that answers stray status bytes', () => {
  it('does not fail a job on one misread status: a problem must be read twice', async () => {
    // A scripted printer: fine throughout, but while the job prints, a stray answer (0x16:
    // DLE EOT 1 with the drawer pin high, as from a `10 04 01` inside the image data) lands
    // just before its answer to a DLE EOT 2, where bit 2 would mean "cover open".
    const pair = createStreamPair();
    let held = Buffer.alloc(0);
    let printing = false;
    let polls = 0;
    const answered: string[] = [];
    pair.b.on('data', (chunk: Buffer) => {
      held = Buffer.concat([held, chunk]);
      for (;;) {
        const step = parseCommand(held, 0);
        if (!step.command) return;
        held = held.subarray(step.length);
        const command = step.command;
        if (command.type === 'transmit-status') printing = true;
        if (command.type !== 'realtime-status') continue;
        if (printing && command.n === 2 && polls++ === 0) {
          pair.b.write(Buffer.from([0x16, 0x12]));
          answered.push('stray');
        } else {
          pair.b.write(Buffer.from([0x12]));
        }
        if (printing && polls >= 3) {
          pair.b.write(Buffer.from([0x00])); // GS r: printed
          printing = false;
        }
      }
    });
    const printer = new ReceiptPrinter(pair.a, { pollIntervalMs: 1 });
    const result = await printer.print(checkerboard(16, 2));
    expect(answered).toEqual(['stray']);
    expect(result.status).toMatchObject({ online: true, coverOpen: false });
    expect(printer.strayBytes).toBeGreaterThan(0);
  });
});

describe('ReceiptPrinter timeouts and disconnects (manual timers)', () => {
  it('times out when the printer is silent, without real waiting', async () => {
    const timers = new ManualTimers();
    const { pair, printer } = setup(
      { timers, statusTimeoutMs: 1000 },
      { answersRealtimeStatus: false },
    );
    const started = Date.now();
    const error = await rejection(
      driveTimers(printer.print(checkerboard(16, 2)), timers, pair.idle),
    );
    expect(error).toMatchObject({ code: 'TIMEOUT', jobSent: false });
    expect(timers.now).toBe(1000);
    expect(Date.now() - started).toBeLessThan(500);
    expect(timers.size).toBe(0);
  });

  it('times out a job that is never confirmed, saying the printer is otherwise fine', async () => {
    const timers = new ManualTimers();
    const { pair, printer } = setup(
      { timers, printTimeoutMs: 2000, pollIntervalMs: 500 },
      { answersTransmitStatus: false },
    );
    const error = await rejection(
      driveTimers(printer.print(checkerboard(16, 2)), timers, pair.idle),
    );
    expect(error).toMatchObject({ code: 'TIMEOUT', jobSent: true, status: { online: true } });
    expect(timers.now).toBe(2000);
    expect(timers.size).toBe(0);
  });

  it('scales the default print timeout with the rows', async () => {
    const timers = new ManualTimers();
    const { pair, printer } = setup({ timers }, { answersTransmitStatus: false });
    await rejection(driveTimers(printer.print(checkerboard(8, 1000)), timers, pair.idle));
    expect(timers.now).toBe(10_000 + 5 * 1000);
  });

  it('fails pending and later calls as DISCONNECTED when the stream closes', async () => {
    const timers = new ManualTimers();
    const { pair, printer } = setup({ timers }, { answersRealtimeStatus: false });
    const pending = printer.status();
    await settle();
    pair.b.destroy();
    expect(await rejection(pending)).toMatchObject({ code: 'DISCONNECTED', disconnected: true });
    expect(await rejection(printer.print(checkerboard(16, 2)))).toMatchObject({
      code: 'DISCONNECTED',
      jobSent: false,
    });
  });

  it('marks a disconnect after the job was written as jobSent', async () => {
    const timers = new ManualTimers();
    const { pair, printer, emulated } = setup({ timers }, { answersTransmitStatus: false });
    const printing = printer.print(checkerboard(16, 2));
    emulated.once('job', () => setImmediate(() => pair.b.destroy()));
    const error = await rejection(driveTimers(printing, timers, pair.idle));
    expect(error).toMatchObject({ code: 'DISCONNECTED', jobSent: true, disconnected: true });
  });

  it('close() stops listening and fails what is pending', async () => {
    const { printer } = setup({}, { answersRealtimeStatus: false });
    const pending = printer.status();
    await settle();
    printer.close();
    expect(await rejection(pending)).toMatchObject({ code: 'DISCONNECTED' });
  });
});
