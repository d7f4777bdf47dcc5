/**
 * What a receipt printer can print, as the relay and the agent both judge a print job's
 * PNG: the head widths of the printers the project drives, the longest receipt, and the
 * PNG header (IHDR) read without decoding, so that an image no printer can print is refused
 * before its pixels cost anything.
 */

/** Head widths in dots of the common 203 dpi printers (docs/printer.md, "Head widths"). */
export const HEAD_WIDTHS = { '58mm': 384, '80mm': 576 } as const;

/** The widest head: what an image is judged against when the printer is not known. */
export const WIDEST_HEAD_DOTS = HEAD_WIDTHS['80mm'];

/** The longest receipt in rows at the head width: 2 m of paper at 8 dots/mm. */
export const MAX_PRINT_ROWS = 16_000;

/**
 * The widest image accepted for printing: twice the widest head. The agent scales a wider
 * image down to its head, so more pixels across only lose detail on paper.
 */
export const MAX_PRINT_IMAGE_WIDTH = 2 * WIDEST_HEAD_DOTS;

/**
 * The most pixels an image may have: as many as the longest receipt has dots on the widest
 * head. It bounds what decoding one image costs (a 1152-pixel-wide image is then at most
 * 8,000 rows).
 */
export const MAX_PRINT_IMAGE_PIXELS = WIDEST_HEAD_DOTS * MAX_PRINT_ROWS;

export interface PngHeader {
  width: number;
  height: number;
  bitDepth: number;
  colourType: number;
}

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

/** Bit depths PNG allows for each colour type (PNG spec, 11.2.2). */
const BIT_DEPTHS: Record<number, readonly number[]> = {
  0: [1, 2, 4, 8, 16],
  2: [8, 16],
  3: [1, 2, 4, 8],
  4: [8, 16],
  6: [8, 16],
};

/**
 * The IHDR of a PNG, read from its first 29 bytes; undefined when they are not a PNG
 * signature followed by a well-formed IHDR (length 13, a bit depth its colour type allows).
 */
export function readPngHeader(png: Uint8Array): PngHeader | undefined {
  if (png.length < 29 || PNG_SIGNATURE.some((byte, i) => png[i] !== byte)) return undefined;
  const view = new DataView(png.buffer, png.byteOffset, png.byteLength);
  const ihdr = String.fromCharCode(png[12]!, png[13]!, png[14]!, png[15]!);
  if (view.getUint32(8) !== 13 || ihdr !== 'IHDR') return undefined;
  const header = {
    width: view.getUint32(16),
    height: view.getUint32(20),
    bitDepth: png[24]!,
    colourType: png[25]!,
  };
  if (!BIT_DEPTHS[header.colourType]?.includes(header.bitDepth)) return undefined;
  return header;
}

/** Rows the image takes on a head `headDots` wide: scaled down when wider, never up. */
export function printedRows(width: number, height: number, headDots = WIDEST_HEAD_DOTS): number {
  return width > headDots ? Math.max(1, Math.round((height * headDots) / width)) : height;
}

/**
 * Why no receipt printer can print an image of this size, or undefined when one can: empty,
 * wider than MAX_PRINT_IMAGE_WIDTH, more than MAX_PRINT_IMAGE_PIXELS, or longer than
 * MAX_PRINT_ROWS on the widest head.
 */
export function unprintableSize(width: number, height: number): string | undefined {
  if (width === 0 || height === 0) return `the image is ${width}×${height} pixels: empty`;
  if (width > MAX_PRINT_IMAGE_WIDTH) {
    return `the image is ${width} pixels wide; at most ${MAX_PRINT_IMAGE_WIDTH} (twice the widest head, ${WIDEST_HEAD_DOTS} dots) can be printed`;
  }
  if (width * height > MAX_PRINT_IMAGE_PIXELS) {
    return `the image is ${width}×${height} pixels; at most ${MAX_PRINT_IMAGE_PIXELS} pixels (${WIDEST_HEAD_DOTS} × ${MAX_PRINT_ROWS}) can be printed`;
  }
  const rows = printedRows(width, height);
  if (rows > MAX_PRINT_ROWS) {
    return `the image is ${width}×${height} pixels, ${rows} rows on a ${WIDEST_HEAD_DOTS}-dot head; at most ${MAX_PRINT_ROWS} rows (2 m of paper) can be printed`;
  }
  return undefined;
}
