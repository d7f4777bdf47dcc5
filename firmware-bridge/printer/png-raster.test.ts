import { describe, expect, it } from 'vitest';
import { PrinterError } from './errors.js';
import {
  dotAt,
  pngSize,
  pngToRaster,
  rasterToPng,
  rgbaToRaster,
  type Raster,
} from './png-raster.js';
import { BLACK, WHITE, checkerboard, makePng, receiptLike, type Rgba } from './testing/images.js';

const hex = (raster: Raster) => Buffer.from(raster.data).toString('hex');
const rows = (raster: Raster) =>
  Array.from({ length: raster.height }, (_, y) =>
    Buffer.from(
      raster.data.subarray(y * raster.bytesPerRow, (y + 1) * raster.bytesPerRow),
    ).toString('hex'),
  );

describe('pngToRaster', () => {
  it('packs a 16×2 checkerboard MSB-first, 1 = black', () => {
    const raster = pngToRaster(checkerboard(16, 2), { headWidth: 16 });
    expect(raster).toMatchObject({ width: 16, height: 2, bytesPerRow: 2 });
    expect(rows(raster)).toEqual(['aaaa', '5555']);
    expect(dotAt(raster, 0, 0)).toBe(true);
    expect(dotAt(raster, 1, 0)).toBe(false);
  });

  it('centers an image narrower than the head', () => {
    expect(rows(pngToRaster(checkerboard(16, 2), { headWidth: 32 }))).toEqual([
      '00aaaa00',
      '00555500',
    ]);
    // 4 black dots on 16: margin (16 - 4) / 2 = 6, across a byte boundary.
    expect(
      hex(
        pngToRaster(
          makePng(4, 1, () => BLACK),
          { headWidth: 16 },
        ),
      ),
    ).toBe('03c0');
    // An odd margin rounds down: 3 dots on 8 start at dot 2.
    expect(
      hex(
        pngToRaster(
          makePng(3, 1, () => BLACK),
          { headWidth: 8 },
        ),
      ),
    ).toBe('38');
  });

  it('fills the default 384-dot head and never scales up', () => {
    const raster = pngToRaster(makePng(8, 8, () => BLACK));
    expect(raster).toMatchObject({ width: 384, height: 8, bytesPerRow: 48 });
    // The 8 dots sit at 188..195, (384 - 8) / 2: half in byte 23, half in byte 24.
    expect([raster.data[22], raster.data[23], raster.data[24], raster.data[25]]).toEqual([
      0x00, 0x0f, 0xf0, 0x00,
    ]);
  });

  it('composites alpha over white before the threshold', () => {
    const alphas = [0, 127, 128, 255];
    // Black at alpha a has luminance 255 - 255·a/255: 255, 128, 127, 0; below 128 is black.
    const png = makePng(8, 1, (x) => [0, 0, 0, alphas[x % 4]!]);
    expect(hex(pngToRaster(png, { headWidth: 8 }))).toBe('33');
  });

  it('thresholds Rec. 601 luminance', () => {
    const colors: Rgba[] = [
      [255, 0, 0, 255], // red, 76: black
      [0, 255, 0, 255], // green, 150: white
      [0, 0, 255, 255], // blue, 29: black
      [255, 255, 0, 255], // yellow, 226: white
      [128, 128, 128, 255], // gray 128: white (not below 128)
      [127, 127, 127, 255], // gray 127: black
      BLACK,
      WHITE,
    ];
    const png = makePng(8, 1, (x) => colors[x]!);
    expect(hex(pngToRaster(png, { headWidth: 8 }))).toBe('a6');
    // A lower threshold keeps only the darkest: blue (29) and black.
    expect(hex(pngToRaster(png, { headWidth: 8, threshold: 50 }))).toBe('22');
  });

  it('scales an image wider than the head down to it, keeping the aspect ratio', () => {
    // 32×4, left half black: on a 16-dot head, 16×2 with the left 8 dots black.
    const raster = pngToRaster(
      makePng(32, 4, (x) => (x < 16 ? BLACK : WHITE)),
      { headWidth: 16 },
    );
    expect(raster).toMatchObject({ width: 16, height: 2 });
    expect(rows(raster)).toEqual(['ff00', 'ff00']);
  });

  it('scales by area average: 1-dot stripes become gray, not all black or all white', () => {
    const stripes = makePng(32, 2, (x) => (x % 2 === 0 ? BLACK : WHITE));
    // Each head dot averages one black and one white pixel: 127.5.
    expect(hex(pngToRaster(stripes, { headWidth: 16, threshold: 128 }))).toBe('ffff');
    expect(hex(pngToRaster(stripes, { headWidth: 16, threshold: 127 }))).toBe('0000');
    // Non-integer ratio (576 → 384) keeps the height ratio and a solid image solid.
    const solid = pngToRaster(
      makePng(576, 30, () => BLACK),
      { headWidth: 384 },
    );
    expect(solid.height).toBe(20);
    expect(solid.data.every((b) => b === 0xff)).toBe(true);
  });

  it('dithers a mid gray to about half the dots, and leaves black and white alone', () => {
    const gray = makePng(64, 64, () => [127, 127, 127, 255]);
    expect(pngToRaster(gray, { headWidth: 64 }).data.every((b) => b === 0xff)).toBe(true);
    const dithered = pngToRaster(gray, { headWidth: 64, dither: true });
    let black = 0;
    for (let y = 0; y < 64; y++) for (let x = 0; x < 64; x++) if (dotAt(dithered, x, y)) black++;
    expect(black / (64 * 64)).toBeGreaterThan(0.45);
    expect(black / (64 * 64)).toBeLessThan(0.55);
    const board = checkerboard(16, 2);
    expect(hex(pngToRaster(board, { headWidth: 16, dither: true }))).toBe(
      hex(pngToRaster(board, { headWidth: 16 })),
    );
  });

  it('rejects what is not a printable PNG as INVALID_IMAGE', () => {
    const invalid = (png: Uint8Array, options = {}) => {
      try {
        pngToRaster(png, options);
      } catch (error) {
        expect(error).toBeInstanceOf(PrinterError);
        expect(error).toMatchObject({ code: 'INVALID_IMAGE', jobSent: false });
        return;
      }
      throw new Error('accepted');
    };
    invalid(Buffer.from('GIF89a not a png at all........'));
    const good = checkerboard(16, 2);
    invalid(good.subarray(0, good.length - 20)); // truncated
    const corrupt = Buffer.from(good);
    corrupt[40] = (corrupt[40] ?? 0) ^ 0xff; // CRC mismatch in the data
    invalid(corrupt);
    // The header claims 100,000 × 100,000: refused before any decoding.
    const huge = Buffer.from(good);
    huge.writeUInt32BE(100_000, 16);
    huge.writeUInt32BE(100_000, 20);
    invalid(huge);
    invalid(
      makePng(8, 100, () => WHITE),
      { headWidth: 8, maxHeight: 99 },
    );
  });

  it('reads the size from the header', () => {
    expect(pngSize(checkerboard(16, 2))).toEqual({ width: 16, height: 2 });
    expect(pngSize(Buffer.from('nope'))).toBeUndefined();
  });

  it('renders a raster back to a PNG that reads as the same raster', () => {
    const raster = pngToRaster(receiptLike(200, 50), { headWidth: 384 });
    expect(pngToRaster(rasterToPng(raster), { headWidth: 384 })).toEqual(raster);
  });

  it('takes raw RGBA too', () => {
    const rgba = new Uint8Array([0, 0, 0, 255, 255, 255, 255, 255]);
    expect(hex(rgbaToRaster(rgba, 2, 1, { headWidth: 8 }))).toBe('10');
  });

  it('converts a 576×2000 receipt in bounded CPU time (a guard against a pathological slow path)', () => {
    const png = receiptLike(576, 2000);
    const wide = receiptLike(1152, 4000);
    // CPU time, best of 5: wall time on a shared, loaded machine measures the neighbours.
    const best = (run: () => void) => {
      let cpu = Infinity;
      let wall = Infinity;
      for (let i = 0; i < 5; i++) {
        const t = performance.now();
        const c = process.cpuUsage();
        run();
        const used = process.cpuUsage(c);
        cpu = Math.min(cpu, (used.user + used.system) / 1000);
        wall = Math.min(wall, performance.now() - t);
      }
      return { cpu, wall, text: `${cpu.toFixed(1)} ms CPU (${wall.toFixed(1)} ms wall)` };
    };
    const plain = best(() => pngToRaster(png, { headWidth: 576 }));
    const dithered = best(() => pngToRaster(png, { headWidth: 576, dither: true }));
    const scaled = best(() => pngToRaster(wide, { headWidth: 576 }));
    console.log(
      `png-raster 576×2000: threshold ${plain.text}, dither ${dithered.text}; ` +
        `1152×4000 scaled to 576: ${scaled.text}`,
    );
    // About 75 ms on the 2-core CI machine when quiet: the bound catches an accidental
    // per-pixel allocation or quadratic loop (seconds), not the neighbours' load.
    expect(plain.cpu).toBeLessThan(400);
    expect(dithered.cpu).toBeLessThan(400);
  });
});
