import { describe, expect, it } from 'vitest';
import {
  decodePaperSensor,
  decodeRealtimeStatus,
  encodeJob,
  encodeRaster,
  isRealtimeStatusByte,
  isTransmitStatusByte,
  realtimeStatusRequest,
  statusProblem,
  PAPER_SENSOR_REQUEST,
} from './escpos.js';
import { blankRaster, pngToRaster } from './png-raster.js';
import { checkerboard } from './testing/images.js';

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

describe('ESC/POS encoding', () => {
  it('encodes a tiny job byte for byte (golden)', () => {
    const raster = pngToRaster(checkerboard(16, 2), { headWidth: 16 });
    expect(hex(encodeJob(raster))).toBe(
      [
        '1b40', // ESC @
        '1d7630' + '00' + '0200' + '0200', // GS v 0, m 0, xL xH = 2 bytes, yL yH = 2 rows
        'aaaa' + '5555', // the rows, MSB = leftmost, 1 = black
        '1b6404', // ESC d 4
        '1d5601', // GS V 1 (partial cut)
      ].join(''),
    );
    expect(hex(encodeJob(raster, { feedLines: 0, cut: 'full', bandRows: 1 }))).toBe(
      '1b40' + '1d76300002000100aaaa' + '1d763000020001005555' + '1d5600',
    );
    expect(hex(encodeJob(raster, { feedLines: 0, cut: 'none' }))).toBe(
      '1b401d76300002000200aaaa5555',
    );
  });

  it('splits into bands with the right xL xH yL yH', () => {
    const raster = blankRaster(576, 300);
    const bands = encodeRaster(raster, 256);
    expect(bands.map((b) => hex(b.subarray(0, 8)))).toEqual([
      '1d76300048000001', // 72 bytes a row, 256 rows: yL 0, yH 1
      '1d7630004800' + '2c00', // 44 rows
    ]);
    expect(bands.map((b) => b.length)).toEqual([8 + 72 * 256, 8 + 72 * 44]);
    expect(encodeRaster(blankRaster(384, 49), 24).map((b) => b[6])).toEqual([24, 24, 1]);
    // The band data is the raster's rows in order.
    const striped = blankRaster(8, 3);
    striped.data.set([1, 2, 3]);
    expect(encodeRaster(striped, 2).map((b) => hex(b.subarray(8)))).toEqual(['0102', '03']);
  });

  it('refuses band sizes and feeds outside the command ranges', () => {
    const raster = blankRaster(8, 1);
    expect(() => encodeRaster(raster, 0)).toThrow(RangeError);
    expect(() => encodeRaster(raster, 2304)).toThrow(RangeError);
    expect(() => encodeJob(raster, { feedLines: 256 })).toThrow(RangeError);
  });

  it('has the status queries', () => {
    expect(hex(realtimeStatusRequest(1))).toBe('100401');
    expect(hex(realtimeStatusRequest(4))).toBe('100404');
    expect(hex(PAPER_SENSOR_REQUEST)).toBe('1d7201');
  });
});

describe('status answers', () => {
  it('tells DLE EOT answers, GS r answers and other bytes apart', () => {
    expect(isRealtimeStatusByte(0x12)).toBe(true);
    expect(isRealtimeStatusByte(0x7e)).toBe(true); // every variable bit set
    expect(isRealtimeStatusByte(0x11)).toBe(false); // XON
    expect(isRealtimeStatusByte(0x13)).toBe(false); // XOFF
    expect(isRealtimeStatusByte(0x00)).toBe(false); // a GS r answer
    expect(isTransmitStatusByte(0x00)).toBe(true);
    expect(isTransmitStatusByte(0x0f)).toBe(true);
    expect(isTransmitStatusByte(0x12)).toBe(false);
    expect(isTransmitStatusByte(0x11)).toBe(false);
    expect(isTransmitStatusByte(0x13)).toBe(false);
    expect(isTransmitStatusByte(0x80)).toBe(false);
  });

  const status = (printer: number, offline: number, paper: number, error?: number) =>
    decodeRealtimeStatus(
      error === undefined ? { printer, offline, paper } : { printer, offline, paper, error },
    );

  it('decodes a ready printer', () => {
    const ready = status(0x12, 0x12, 0x12);
    expect(ready).toMatchObject({
      online: true,
      coverOpen: false,
      paperOut: false,
      paperNearEnd: false,
      error: false,
    });
    expect(statusProblem(ready)).toBeUndefined();
  });

  it('decodes the offline causes, cover open before paper out', () => {
    expect(statusProblem(status(0x1a, 0x16, 0x12))).toBe('COVER_OPEN');
    expect(status(0x1a, 0x16, 0x12).coverOpen).toBe(true);
    expect(statusProblem(status(0x1a, 0x32, 0x72))).toBe('PAPER_OUT');
    // The cover open also uncovers the paper sensor.
    expect(statusProblem(status(0x1a, 0x36, 0x72))).toBe('COVER_OPEN');
    // Roll end sensor alone (DLE EOT 4 bits 5-6), or bit 5 alone (Citizen presenter models).
    expect(status(0x1a, 0x12, 0x72).paperOut).toBe(true);
    expect(status(0x1a, 0x12, 0x32).paperOut).toBe(true);
    expect(status(0x12, 0x12, 0x52).paperOut).toBe(false); // bit 6 alone: presenter sensor
    const jam = status(0x1a, 0x52, 0x12, 0x1a);
    expect(jam).toMatchObject({ error: true, autocutterError: true, unrecoverableError: false });
    expect(statusProblem(jam)).toBe('OFFLINE');
    expect(status(0x1a, 0x52, 0x12, 0x52).autoRecoverableError).toBe(true);
    expect(status(0x1a, 0x52, 0x12, 0x32).unrecoverableError).toBe(true);
    expect(statusProblem(status(0x1a, 0x1a, 0x12))).toBe('OFFLINE'); // feed button
    expect(status(0x1a, 0x1a, 0x12).feedButton).toBe(true);
  });

  it('reports a near end without refusing to print', () => {
    const low = status(0x12, 0x12, 0x1e);
    expect(low.paperNearEnd).toBe(true);
    expect(statusProblem(low)).toBeUndefined();
    expect(status(0x12, 0x12, 0x16).paperNearEnd).toBe(true); // one of two near-end sensors
  });

  it('decodes GS r 1', () => {
    expect(decodePaperSensor(0x00)).toEqual({ paperNearEnd: false, paperOut: false });
    expect(decodePaperSensor(0x03)).toEqual({ paperNearEnd: true, paperOut: false });
    expect(decodePaperSensor(0x0c)).toEqual({ paperNearEnd: false, paperOut: true });
  });
});
