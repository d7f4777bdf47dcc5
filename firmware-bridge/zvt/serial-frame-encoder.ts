/**
 * APDUs to ZVT serial frames, and the link's one-byte answers, as a stream Transform in the
 * manner of `@serialport/parser-*` (writable side objectMode, readable side bytes):
 *
 * ```
 *   write(apdu Buffer)  ──▶  10 02 | APDU, every 10 doubled | 10 03 | CRC lo | CRC hi
 *   write('ACK')        ──▶  06
 *   write('NAK')        ──▶  15
 * ```
 *
 * One stream carries both, so a link's answers and frames reach the line in the order it
 * wrote them. The CRC (crc.ts) is over the unstuffed APDU and ETX, and is not stuffed.
 */
import { Transform, type TransformCallback, type TransformOptions } from 'node:stream';
import { frameCrc } from './crc.js';

export const DLE = 0x10;
export const STX = 0x02;
export const ETX = 0x03;
export const ACK = 0x06;
export const NAK = 0x15;

export type SerialOutput = Buffer | 'ACK' | 'NAK';

/** The wire bytes of one frame around `apdu`. */
export function frameApdu(apdu: Uint8Array): Buffer {
  const out: number[] = [DLE, STX];
  for (const byte of apdu) {
    out.push(byte);
    if (byte === DLE) out.push(DLE);
  }
  const crc = frameCrc(apdu);
  out.push(DLE, ETX, crc & 0xff, crc >> 8);
  return Buffer.from(out);
}

export class ZvtFrameEncoder extends Transform {
  constructor(options: TransformOptions = {}) {
    super({ ...options, writableObjectMode: true });
  }

  override _transform(
    chunk: SerialOutput,
    _encoding: BufferEncoding,
    callback: TransformCallback,
  ): void {
    if (chunk === 'ACK') callback(null, Buffer.from([ACK]));
    else if (chunk === 'NAK') callback(null, Buffer.from([NAK]));
    else if (Buffer.isBuffer(chunk)) callback(null, frameApdu(chunk));
    else callback(new TypeError('ZvtFrameEncoder takes APDU Buffers, "ACK" or "NAK"'));
  }
}
