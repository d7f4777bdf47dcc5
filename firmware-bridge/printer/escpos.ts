/**
 * The ESC/POS commands this driver sends, and the status bytes it reads back. Pure.
 *
 * A job is:
 *
 * ```
 *   ESC @                                  1B 40               initialize
 *   GS v 0 m xL xH yL yH d1…dk  (× bands)  1D 76 30 00 …       raster bit image, ≤ bandRows rows each
 *   ESC d n                                1B 64 n             print and feed n lines (to the cutter)
 *   GS V m                                 1D 56 00|01         full | partial cut
 * ```
 *
 * with x = bytes per row (xL + xH × 256) and y = rows in the band (yL + yH × 256), and
 * k = x × y bytes of data, MSB = leftmost dot, 1 = black. Status queries:
 *
 * ```
 *   DLE EOT n   10 04 n   real-time status, n = 1..4: answered at once, even when offline
 *   GS r 1      1D 72 01  paper sensor status: answered in turn, after the data before it
 *                         has been printed; never while the printer is offline
 * ```
 *
 * docs/printer.md has the bit tables and the quirks of real printers.
 */
import type { Raster } from './png-raster.js';
import type { PrinterStatus, RealtimeStatusBytes } from './status.js';

export const ESC = 0x1b;
export const GS = 0x1d;
export const DLE = 0x10;
export const EOT = 0x04;

/** Largest yL + yH × 256 we send in one GS v 0 (the Epson TM limit; others allow more). */
export const MAX_BAND_ROWS = 2303;

export type CutMode = 'full' | 'partial' | 'none';

export interface JobOptions {
  /**
   * Rows per GS v 0 command, 1 to 2303 (default 256). Smaller bands suit printers with
   * small receive buffers and no flow control, which drop or garble data when a command
   * outgrows the buffer; larger bands print with fewer stop-and-go marks.
   */
  bandRows?: number;
  /**
   * Lines fed with ESC d after the image (default 4): the cutter sits above the head, so
   * without the feed the end of the image is cut off into the next receipt.
   */
  feedLines?: number;
  /** GS V after the feed (default 'partial': the receipt hangs on one point, does not drop). */
  cut?: CutMode;
}

export const INITIALIZE = Buffer.from([ESC, 0x40]);

/** One GS v 0 command (normal density) for rows [start, start + rows) of the raster. */
export function rasterBand(raster: Raster, start: number, rows: number): Buffer {
  const x = raster.bytesPerRow;
  const header = Buffer.from([GS, 0x76, 0x30, 0x00, x & 0xff, x >> 8, rows & 0xff, rows >> 8]);
  const data = raster.data.subarray(start * x, (start + rows) * x);
  return Buffer.concat([header, data]);
}

/** The GS v 0 commands for the whole raster, in bands of at most bandRows rows. */
export function encodeRaster(raster: Raster, bandRows = 256): Buffer[] {
  if (!Number.isInteger(bandRows) || bandRows < 1 || bandRows > MAX_BAND_ROWS)
    throw new RangeError(`bandRows must be an integer from 1 to ${MAX_BAND_ROWS}, not ${bandRows}`);
  const bands: Buffer[] = [];
  for (let start = 0; start < raster.height; start += bandRows)
    bands.push(rasterBand(raster, start, Math.min(bandRows, raster.height - start)));
  return bands;
}

export function feedLines(lines: number): Buffer {
  if (!Number.isInteger(lines) || lines < 0 || lines > 255)
    throw new RangeError(`feed must be 0 to 255 lines, not ${lines}`);
  return lines === 0 ? Buffer.alloc(0) : Buffer.from([ESC, 0x64, lines]);
}

export function cut(mode: CutMode): Buffer {
  if (mode === 'none') return Buffer.alloc(0);
  return Buffer.from([GS, 0x56, mode === 'full' ? 0x00 : 0x01]);
}

/** The bytes of a whole print job. */
export function encodeJob(raster: Raster, options: JobOptions = {}): Buffer {
  return Buffer.concat([
    INITIALIZE,
    ...encodeRaster(raster, options.bandRows),
    feedLines(options.feedLines ?? 4),
    cut(options.cut ?? 'partial'),
  ]);
}

// ---------------------------------------------------------------------------------------
// Status

/** DLE EOT n: 1 printer, 2 offline cause, 3 error cause, 4 roll paper sensor. */
export type RealtimeStatusKind = 1 | 2 | 3 | 4;

export function realtimeStatusRequest(n: RealtimeStatusKind): Buffer {
  return Buffer.from([DLE, EOT, n]);
}

/** GS r 1: paper sensor status, answered only once the data sent before it is processed. */
export const PAPER_SENSOR_REQUEST = Buffer.from([GS, 0x72, 0x01]);

/**
 * A DLE EOT answer has bit 0 = 0, bit 1 = 1, bit 4 = 1 and bit 7 = 0 (0xx1xx10). Anything
 * else on the line (XON 0x11, XOFF 0x13, noise, a GS r answer) is not one.
 */
export function isRealtimeStatusByte(byte: number): boolean {
  return (byte & 0x93) === 0x12;
}

/** A GS r answer has bit 4 = 0 and bit 7 = 0 (0xx0xxxx), which tells it from DLE EOT's and XON/XOFF. */
export function isTransmitStatusByte(byte: number): boolean {
  return (byte & 0x90) === 0x00;
}

/** Reads the four DLE EOT answers (status.ts has what each field means). */
export function decodeRealtimeStatus(raw: RealtimeStatusBytes): PrinterStatus {
  const bit = (byte: number | undefined, n: number) =>
    byte !== undefined && (byte & (1 << n)) !== 0;
  return {
    online: !bit(raw.printer, 3),
    coverOpen: bit(raw.offline, 2),
    paperOut: bit(raw.offline, 5) || bit(raw.paper, 5),
    paperNearEnd: bit(raw.paper, 2) || bit(raw.paper, 3),
    feedButton: bit(raw.offline, 3),
    error: bit(raw.offline, 6),
    autocutterError: bit(raw.error, 3),
    unrecoverableError: bit(raw.error, 5),
    autoRecoverableError: bit(raw.error, 6),
    raw,
  };
}

/** GS r 1's answer: bits 0-1 near-end sensor, bits 2-3 roll end sensor. */
export function decodePaperSensor(byte: number): { paperNearEnd: boolean; paperOut: boolean } {
  return { paperNearEnd: (byte & 0x03) !== 0, paperOut: (byte & 0x0c) !== 0 };
}

/** Why a printer in this status cannot print, most specific first; undefined when it can. */
export function statusProblem(
  status: PrinterStatus,
): 'COVER_OPEN' | 'PAPER_OUT' | 'OFFLINE' | undefined {
  // An open cover also uncovers the paper sensor, so it is named before paper out.
  if (status.coverOpen) return 'COVER_OPEN';
  if (status.paperOut) return 'PAPER_OUT';
  if (!status.online || status.error) return 'OFFLINE';
  return undefined;
}
