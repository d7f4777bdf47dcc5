/**
 * PNG to the 1-bit raster a thermal head prints, and back (for inspection). Pure.
 *
 * ```
 *   PNG ─▶ RGBA ─▶ luminance over white ─▶ scale down to the head ─▶ center ─▶ threshold
 *                  (alpha composited)      (area average; never up)            or dither
 *                                                                       ─▶ rows of packed bits
 * ```
 *
 * A raster row is always the full head width: bit 7 of a byte is its leftmost dot, and a
 * 1 bit burns a black dot, as ESC/POS `GS v 0` expects.
 */
import { PNG } from 'pngjs';
import { HEAD_WIDTHS, MAX_PRINT_ROWS } from '../../protocol/print-image.js';
import { PrinterError } from './errors.js';

// The relay judges print jobs by the same head widths and length.
export { HEAD_WIDTHS };

export interface Raster {
  /** Dots per row, a multiple of 8. */
  width: number;
  /** Rows (dot lines). */
  height: number;
  /** width / 8. */
  bytesPerRow: number;
  /** height × bytesPerRow bytes, row after row; MSB = leftmost dot, 1 = black. */
  data: Uint8Array;
}

export interface RasterOptions {
  /** Head width in dots, a multiple of 8 (default 384, a 58 mm printer; 576 for 80 mm). */
  headWidth?: number;
  /** Floyd–Steinberg error diffusion instead of a plain threshold (default false): photos and logos. */
  dither?: boolean;
  /** A dot is black when its luminance (0-255, over white) is below this (default 128). */
  threshold?: number;
  /**
   * Most rows a job may have after scaling (default 16,000: 2 m of paper at 8 dots/mm).
   * Prevents a mistaken image (a very tall PNG) from using up the roll.
   */
  maxHeight?: number;
  /**
   * Most pixels the PNG may declare (default 40,000,000), checked before decoding. Prevents a
   * small compressed file from inflating into gigabytes of RGBA.
   */
  maxSourcePixels?: number;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Validates a head width: a multiple of 8 dots between 8 and 4096. */
export function checkHeadWidth(headWidth: number): number {
  if (!Number.isInteger(headWidth) || headWidth < 8 || headWidth > 4096 || headWidth % 8 !== 0)
    throw new RangeError(
      `head width must be a multiple of 8 dots from 8 to 4096, not ${headWidth}`,
    );
  return headWidth;
}

/** An all-white raster. */
export function blankRaster(width: number, height: number): Raster {
  const bytesPerRow = checkHeadWidth(width) / 8;
  return { width, height, bytesPerRow, data: new Uint8Array(bytesPerRow * height) };
}

/** Whether the dot at (x, y) is black. */
export function dotAt(raster: Raster, x: number, y: number): boolean {
  const byte = raster.data[y * raster.bytesPerRow + (x >> 3)] ?? 0;
  return (byte & (0x80 >> (x & 7))) !== 0;
}

/** Width and height from the IHDR chunk, without decoding; undefined if not a PNG. */
export function pngSize(png: Uint8Array): { width: number; height: number } | undefined {
  if (png.length < 24 || !PNG_SIGNATURE.equals(Buffer.from(png.subarray(0, 8)))) return undefined;
  if (Buffer.from(png.subarray(12, 16)).toString('latin1') !== 'IHDR') return undefined;
  const view = new DataView(png.buffer, png.byteOffset, png.byteLength);
  return { width: view.getUint32(16), height: view.getUint32(20) };
}

/** Decodes a PNG and turns it into a raster for the head; throws PrinterError INVALID_IMAGE. */
export function pngToRaster(png: Uint8Array, options: RasterOptions = {}): Raster {
  const headWidth = checkHeadWidth(options.headWidth ?? HEAD_WIDTHS['58mm']);
  const size = pngSize(png);
  if (!size) throw new PrinterError('INVALID_IMAGE', 'not a PNG file (bad signature or header)');
  const maxPixels = options.maxSourcePixels ?? 40_000_000;
  if (size.width === 0 || size.height === 0 || size.width * size.height > maxPixels)
    throw new PrinterError(
      'INVALID_IMAGE',
      `PNG is ${size.width}×${size.height}: empty or over the ${maxPixels}-pixel limit`,
    );
  let decoded: { width: number; height: number; data: Buffer };
  try {
    decoded = PNG.sync.read(Buffer.from(png.buffer, png.byteOffset, png.byteLength));
  } catch (cause) {
    throw new PrinterError('INVALID_IMAGE', `PNG could not be decoded: ${String(cause)}`, {
      cause,
    });
  }
  return rgbaToRaster(decoded.data, decoded.width, decoded.height, { ...options, headWidth });
}

/** The same pipeline from raw RGBA pixels (4 bytes a pixel, row after row). */
export function rgbaToRaster(
  rgba: Uint8Array,
  width: number,
  height: number,
  options: RasterOptions = {},
): Raster {
  const headWidth = checkHeadWidth(options.headWidth ?? HEAD_WIDTHS['58mm']);
  let gray = luminanceOverWhite(rgba, width, height);
  let w = width;
  let h = height;
  if (w > headWidth) {
    const scaledHeight = Math.max(1, Math.round((h * headWidth) / w));
    gray = scaleDown(gray, w, h, headWidth, scaledHeight);
    w = headWidth;
    h = scaledHeight;
  }
  const maxHeight = options.maxHeight ?? MAX_PRINT_ROWS;
  if (h > maxHeight)
    throw new PrinterError(
      'INVALID_IMAGE',
      `image is ${h} rows at the head width, over the ${maxHeight}-row limit`,
    );
  const threshold = options.threshold ?? 128;
  if (options.dither) floydSteinberg(gray, w, h, threshold);
  return pack(gray, w, h, headWidth, threshold);
}

/** Rec. 601 luma of each pixel after compositing it over white paper. */
function luminanceOverWhite(rgba: Uint8Array, width: number, height: number): Float32Array {
  const out = new Float32Array(width * height);
  for (let i = 0, p = 0; i < out.length; i++, p += 4) {
    const luma = 0.299 * rgba[p]! + 0.587 * rgba[p + 1]! + 0.114 * rgba[p + 2]!;
    const alpha = rgba[p + 3]! / 255;
    out[i] = 255 - (255 - luma) * alpha;
  }
  return out;
}

/**
 * For each destination cell of a 1-D down-scale, the source cells it covers and their weights
 * (fractions of the cell, summing to 1): an area average, so thin lines fade to gray rather
 * than vanish as they would with nearest-neighbour sampling.
 */
function coverage(from: number, to: number): { first: Int32Array; weights: Float32Array[] } {
  const ratio = from / to;
  const first = new Int32Array(to);
  const weights: Float32Array[] = [];
  for (let d = 0; d < to; d++) {
    const start = d * ratio;
    const end = Math.min(from, start + ratio);
    const s0 = Math.floor(start);
    const s1 = Math.ceil(end);
    const w = new Float32Array(s1 - s0);
    for (let s = s0; s < s1; s++) w[s - s0] = (Math.min(end, s + 1) - Math.max(start, s)) / ratio;
    first[d] = s0;
    weights.push(w);
  }
  return { first, weights };
}

function scaleDown(
  src: Float32Array,
  width: number,
  height: number,
  toWidth: number,
  toHeight: number,
): Float32Array {
  const cols = coverage(width, toWidth);
  const rows = coverage(height, toHeight);
  const across = new Float32Array(toWidth * height);
  for (let y = 0; y < height; y++) {
    const row = y * width;
    for (let x = 0; x < toWidth; x++) {
      const s0 = cols.first[x]!;
      const w = cols.weights[x]!;
      let sum = 0;
      for (let k = 0; k < w.length; k++) sum += src[row + s0 + k]! * w[k]!;
      across[y * toWidth + x] = sum;
    }
  }
  const out = new Float32Array(toWidth * toHeight);
  for (let y = 0; y < toHeight; y++) {
    const s0 = rows.first[y]!;
    const w = rows.weights[y]!;
    const dst = y * toWidth;
    for (let k = 0; k < w.length; k++) {
      const weight = w[k]!;
      const srcRow = (s0 + k) * toWidth;
      for (let x = 0; x < toWidth; x++) out[dst + x]! += across[srcRow + x]! * weight;
    }
  }
  return out;
}

/** Floyd–Steinberg error diffusion in place: every value ends 0 (black) or 255 (white). */
function floydSteinberg(gray: Float32Array, width: number, height: number, threshold: number) {
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = y * width + x;
      const old = gray[i]!;
      const value = old < threshold ? 0 : 255;
      gray[i] = value;
      const error = old - value;
      if (x + 1 < width) gray[i + 1]! += (error * 7) / 16;
      if (y + 1 < height) {
        if (x > 0) gray[i + width - 1]! += (error * 3) / 16;
        gray[i + width]! += (error * 5) / 16;
        if (x + 1 < width) gray[i + width + 1]! += error / 16;
      }
    }
  }
}

/** Thresholds and packs the image into head-wide rows, centered (left margin rounded down). */
function pack(
  gray: Float32Array,
  width: number,
  height: number,
  headWidth: number,
  threshold: number,
): Raster {
  const raster = blankRaster(headWidth, height);
  const offset = (headWidth - width) >> 1;
  const { data, bytesPerRow } = raster;
  for (let y = 0; y < height; y++) {
    const src = y * width;
    const dst = y * bytesPerRow;
    for (let x = 0; x < width; x++) {
      if (gray[src + x]! < threshold) {
        const dot = x + offset;
        data[dst + (dot >> 3)]! |= 0x80 >> (dot & 7);
      }
    }
  }
  return raster;
}

/** Renders a raster as a black-on-white PNG, to look at what a printer was sent. */
export function rasterToPng(raster: Raster): Buffer {
  const png = new PNG({ width: raster.width, height: raster.height });
  for (let y = 0; y < raster.height; y++) {
    for (let x = 0; x < raster.width; x++) {
      const p = (y * raster.width + x) * 4;
      const v = dotAt(raster, x, y) ? 0 : 255;
      png.data[p] = v;
      png.data[p + 1] = v;
      png.data[p + 2] = v;
      png.data[p + 3] = 255;
    }
  }
  return PNG.sync.write(png);
}
