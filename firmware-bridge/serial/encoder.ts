/**
 * Frames to bytes: node-serialport's `SlipEncoder` (RFC 1055) fed with our CRC'd packets.
 *
 * ```
 *   write(frame) ──▶ encodePacket ──▶ SLIP stuffing ──▶  C0 | escaped packet | C0
 *                    (codec.ts)       (SlipEncoder,        ▲
 *                                      bluetoothQuirk)     └ leading END: flushes line noise
 * ```
 *
 * The leading END (the encoder's `bluetoothQuirk` option, allowed by RFC 1055) closes any
 * noise or half frame the receiver holds, so it is dropped on its own instead of spoiling
 * this frame. Writable side: objectMode, one `Frame` (or an already built packet Buffer,
 * for tests and tools) per write; readable side: bytes, one chunk per frame.
 */
import type { TransformCallback, TransformOptions } from 'node:stream';
import { SlipEncoder } from '@serialport/parser-slip-encoder';
import { encodePacket, type Frame } from './codec.js';

export class FrameEncoder extends SlipEncoder {
  constructor(options: TransformOptions = {}) {
    super({ ...options, bluetoothQuirk: true, writableObjectMode: true });
  }

  override _transform(
    frame: Frame | Buffer,
    encoding: BufferEncoding,
    callback: TransformCallback,
  ): void {
    let packet: Buffer;
    try {
      packet = Buffer.isBuffer(frame) ? frame : encodePacket(frame);
    } catch (error) {
      callback(error as Error);
      return;
    }
    super._transform(packet, encoding, callback);
  }
}
