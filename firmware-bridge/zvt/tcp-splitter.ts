/**
 * ZVT over TCP has no framing, no CRC and no link ACK (zvt-notes §2.2): APDUs are written
 * back to back and each one's length comes from its own header. This Transform (bytes in,
 * one Buffer per APDU out) finds the boundaries, like `@serialport/parser-packet-length`:
 *
 * ```
 *   read:   80 00 00 04 FF 01 | 17 06 D3 FF 61 04 06 82 … (1121 bytes over 10 reads) …
 *   push:   [80 00 00] [04 FF 01 17] [06 D3 FF 61 04 …]
 * ```
 *
 * Options (defaults): `maxApduLength` (16384, ten times the largest print block in the
 * captures): an APDU announcing more is skipped — its bytes are counted off and discarded,
 * a `'drop'` event says so — so a hostile peer cannot make it buffer 64 KiB per message,
 * and the boundaries stay in step. A half APDU when the stream ends is dropped the same way.
 */
import { Transform, type TransformCallback } from 'node:stream';
import { apduLength } from './apdu.js';
import { DEFAULT_MAX_APDU_LENGTH } from './serial-frame-decoder.js';

export interface ApduSplitterOptions {
  /** Largest APDU passed on, header included (default 16384). */
  maxApduLength?: number;
}

export interface SplitterDrop {
  reason: 'too-large' | 'truncated';
  /** Bytes the APDU announced (too-large) or had when the stream ended (truncated). */
  bytes: number;
}

export class ApduSplitter extends Transform {
  readonly maxApduLength: number;
  private pending: Buffer = Buffer.alloc(0);
  /** Bytes still to discard of a skipped APDU. */
  private skipping = 0;

  constructor(options: ApduSplitterOptions = {}) {
    super({ readableObjectMode: true });
    this.maxApduLength = options.maxApduLength ?? DEFAULT_MAX_APDU_LENGTH;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    let bytes = chunk;
    if (this.skipping > 0) {
      const skipped = Math.min(this.skipping, bytes.length);
      this.skipping -= skipped;
      bytes = bytes.subarray(skipped);
    }
    this.pending = this.pending.length === 0 ? bytes : Buffer.concat([this.pending, bytes]);
    for (;;) {
      const total = apduLength(this.pending);
      if (total === undefined) break;
      if (total > this.maxApduLength) {
        this.reportDrop({ reason: 'too-large', bytes: total });
        const skipped = Math.min(total, this.pending.length);
        this.skipping = total - skipped;
        this.pending = this.pending.subarray(skipped);
        if (this.skipping > 0) break;
        continue;
      }
      if (this.pending.length < total) break;
      this.push(Buffer.from(this.pending.subarray(0, total)));
      this.pending = this.pending.subarray(total);
    }
    // Keep only what is still needed, not the whole chunk it came in.
    if (this.pending.length > 0 && this.pending.byteOffset > 0)
      this.pending = Buffer.from(this.pending);
    callback();
  }

  override _flush(callback: TransformCallback): void {
    if (this.pending.length > 0)
      this.reportDrop({ reason: 'truncated', bytes: this.pending.length });
    this.pending = Buffer.alloc(0);
    callback();
  }

  private reportDrop(info: SplitterDrop): void {
    this.emit('drop', info);
  }
}
