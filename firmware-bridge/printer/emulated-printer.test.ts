import { describe, expect, it } from 'vitest';
import { createStreamPair } from '../serial/stream-pair.js';
import { EmulatedPrinter } from './emulated-printer.js';
import { parseAll, parseCommand } from './escpos-parser.js';
import { encodeJob, realtimeStatusRequest } from './escpos.js';
import { blankRaster, pngToRaster, rasterToPng } from './png-raster.js';
import { checkerboard, receiptLike, settle } from './testing/images.js';

const bytes = (...hex: string[]) => Buffer.from(hex.join(''), 'hex');

/** An emulated printer on side b of a stream pair; the test writes on side a. */
function bench(options: ConstructorParameters<typeof EmulatedPrinter>[0] = {}, maxChunk?: number) {
  const pair = createStreamPair(maxChunk ? { aToB: { maxChunk } } : {});
  const printer = new EmulatedPrinter(options);
  printer.attach(pair.b);
  const answers: number[] = [];
  pair.a.on('data', (chunk: Buffer) => answers.push(...chunk));
  const send = async (data: Buffer) => {
    pair.a.write(data);
    await pair.idle();
  };
  return { pair, printer, answers, send };
}

describe('ESC/POS parser', () => {
  it('splits a job into its commands', () => {
    const raster = pngToRaster(checkerboard(16, 2), { headWidth: 16 });
    const { commands, rest } = parseAll(encodeJob(raster, { bandRows: 1 }));
    expect(rest).toBe(Buffer.from(encodeJob(raster, { bandRows: 1 })).length);
    expect(commands.map((c) => c.type)).toEqual(['init', 'raster', 'raster', 'feed-lines', 'cut']);
    expect(commands[1]).toMatchObject({ mode: 0, bytesPerRow: 2, rows: 1 });
    expect(commands[4]).toEqual({ type: 'cut', partial: true });
  });

  it('says how many bytes an incomplete command needs', () => {
    expect(parseCommand(bytes('1d7630000200'), 0)).toEqual({ need: 8 });
    expect(parseCommand(bytes('1d76300002000300aa'), 0)).toEqual({ need: 14 });
    expect(parseCommand(bytes('1004'), 0)).toEqual({ need: 3 });
    expect(parseCommand(bytes('1b'), 0)).toEqual({ need: 2 });
  });

  it('knows both GS V forms, text, and reports unknown commands', () => {
    const { commands } = parseAll(bytes('1d5641', '03', '1d5630', '4869', '0a', '1b2133', '07'));
    expect(commands).toEqual([
      { type: 'cut', partial: false, feed: 3 },
      { type: 'cut', partial: false },
      { type: 'text', bytes: new Uint8Array([0x48, 0x69]) },
      { type: 'line-feed' },
      { type: 'unknown', bytes: new Uint8Array([0x1b, 0x21]) },
      { type: 'text', bytes: new Uint8Array([0x33]) },
      { type: 'unknown', bytes: new Uint8Array([0x07]) },
    ]);
  });
});

describe('EmulatedPrinter', () => {
  it('keeps a job as the raster it was sent, even fed one byte at a time', async () => {
    const raster = pngToRaster(receiptLike(300, 70), { headWidth: 384 });
    const { printer, send } = bench({}, 1);
    const job = printer.nextJob();
    await send(encodeJob(raster, { bandRows: 24 }));
    expect(await job).toMatchObject({ cut: 'partial', bands: 3, feedLines: 4, feedDots: 0 });
    expect((await job).raster).toEqual(raster);
    expect(printer.counts).toMatchObject({ init: 1, raster: 3, cut: 1 });
    expect(printer.unknownCommands).toEqual([]);
  });

  it('answers DLE EOT 1-4 and GS r 1 with the bits of docs/printer.md', async () => {
    const { printer, answers, send } = bench();
    const query = bytes('100401', '100402', '100403', '100404', '1d7201');
    await send(query);
    expect(answers).toEqual([0x12, 0x12, 0x12, 0x12, 0x00]);
    printer.setNearEnd(true);
    printer.setFault('autocutter');
    answers.length = 0;
    await send(query);
    // Offline: DLE EOT still answered, GS r held until the printer is back.
    expect(answers).toEqual([0x1a, 0x52, 0x1a, 0x1e]);
    printer.setFault(undefined);
    await settle();
    expect(answers).toEqual([0x1a, 0x52, 0x1a, 0x1e, 0x03]);
  });

  it('stops printing at paper end, holds the rest, and finishes once paper is loaded', async () => {
    const raster = pngToRaster(receiptLike(384, 100), { headWidth: 384 });
    const { printer, answers, send } = bench({ paperRows: 30 });
    await send(encodeJob(raster, { bandRows: 24 }));
    expect(printer.paperOut).toBe(true);
    expect(printer.online).toBe(false);
    expect(printer.uncutRows).toBe(30);
    expect(printer.warnings).toEqual(['paper ran out: 18 rows of a band lost']);
    await send(realtimeStatusRequest(4));
    expect(answers).toEqual([0x72]);
    const job = printer.nextJob();
    printer.loadPaper();
    // 30 rows, then the 3 bands after the one that ran out: 30 + 24 + 24 + 4.
    expect((await job).raster.height).toBe(82);
    expect(printer.jobs).toHaveLength(1);
  });

  it('pads narrow bands, clips wide ones, and warns', async () => {
    const { printer, send } = bench({ headWidth: 16 });
    const job = printer.nextJob();
    await send(bytes('1d76300001000100ff', '1d76300003000100aabbcc', '1d5600'));
    expect(Buffer.from((await job).raster.data).toString('hex')).toBe('ff00aabb');
    expect(printer.warnings).toEqual(['GS v 0 band of 24 dots on a 16-dot head: clipped']);
  });

  it('does not answer when told not to', async () => {
    const { printer, answers, send } = bench({ answersTransmitStatus: false });
    await send(bytes('1d7201', '100401'));
    expect(answers).toEqual([0x12]);
    printer.answersRealtimeStatus = false;
    await send(bytes('100401'));
    expect(answers).toEqual([0x12]);
  });

  it('keeps text and renders a job back to PNG', async () => {
    const { printer, send } = bench({ headWidth: 8 });
    const job = printer.nextJob();
    await send(bytes('1b40', '4869', '0a', '1d76300001000200f00f', '1b4a10', '1d5600'));
    expect(await job).toMatchObject({ text: 'Hi\n', feedDots: 16, cut: 'full' });
    const png = rasterToPng((await job).raster);
    expect(pngToRaster(png, { headWidth: 8 })).toEqual((await job).raster);
    expect(blankRaster(8, 0).data).toHaveLength(0);
  });
});
