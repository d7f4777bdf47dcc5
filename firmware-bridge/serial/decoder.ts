/**
 * Bytes to frames: SLIP unstuffing with a bounded buffer, then the packet checks of
 * codec.ts. Corrupted input is dropped, never thrown: the stream does not emit 'error' for
 * line noise, it counts it (`stats`) and emits `'drop'`, and it is back in step at the next
 * END byte, which never occurs inside a packet.
 *
 * ```
 *  bytes: ..noise.. C0 | 01 81 2A 00 1B {"v":1,...} 3F A0 11 7C | C0 C0 | ... | C0
 *                    ▲   └──────────── one packet ─────────────┘   ▲  ▲
 *        closes noise: dropped as too-short / bad-crc             end  start of next
 * ```
 *
 * Options (defaults): `maxPayload` (8192): a packet longer than its header, CRC and this
 * many payload bytes is discarded up to the next END (`oversize`), so a line that never
 * sends END (a break, wrong baud rate) cannot grow memory.
 *
 * We do not reuse node-serialport's `SlipDecoder`: it buffers without bound, copies the
 * whole buffer for every byte, and emits a half packet on a bad escape.
 */
import { Transform, type TransformCallback } from 'node:stream';
import {
  DEFAULT_MAX_PAYLOAD,
  MIN_PACKET_LENGTH,
  SLIP,
  decodePacket,
  type DropReason,
} from './codec.js';

export interface FrameDecoderOptions {
  /** Largest payload accepted, in bytes (default 8192). */
  maxPayload?: number;
}

export interface DecoderStats {
  /** Frames that passed every check and were pushed. */
  frames: number;
  /** Dropped packets (or runs of noise), by reason. */
  dropped: Record<DropReason, number>;
  /** Bytes thrown away with them (unstuffed, as far as they were kept). */
  droppedBytes: number;
}

export interface DropInfo {
  reason: DropReason;
  /** Bytes of the dropped packet (for `oversize`: the bytes kept before the limit). */
  length: number;
}

export class FrameDecoder extends Transform {
  readonly maxPayload: number;
  readonly stats: DecoderStats = {
    frames: 0,
    droppedBytes: 0,
    dropped: {
      'too-short': 0,
      oversize: 0,
      'bad-escape': 0,
      'bad-crc': 0,
      'bad-version': 0,
      'bad-type': 0,
      'bad-length': 0,
    },
  };
  private readonly buffer: Buffer;
  private length = 0;
  private escaped = false;
  /** Why the packet being received is already lost; it is discarded at the next END. */
  private discarding: DropReason | undefined;

  constructor(options: FrameDecoderOptions = {}) {
    super({ readableObjectMode: true });
    this.maxPayload = options.maxPayload ?? DEFAULT_MAX_PAYLOAD;
    this.buffer = Buffer.alloc(MIN_PACKET_LENGTH + this.maxPayload);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    for (const byte of chunk) {
      if (byte === SLIP.END) {
        this.endPacket();
      } else if (this.discarding) {
        continue;
      } else if (this.escaped) {
        this.escaped = false;
        if (byte === SLIP.ESC_END) this.append(SLIP.END);
        else if (byte === SLIP.ESC_ESC) this.append(SLIP.ESC);
        else this.discarding = 'bad-escape';
      } else if (byte === SLIP.ESC) {
        this.escaped = true;
      } else {
        this.append(byte);
      }
    }
    callback();
  }

  /** A trailing half packet when the line ends is noise. */
  override _flush(callback: TransformCallback): void {
    if (this.length > 0 || this.discarding) this.reject(this.discarding ?? 'too-short');
    callback();
  }

  private append(byte: number): void {
    if (this.length === this.buffer.length) {
      this.discarding = 'oversize';
      return;
    }
    this.buffer[this.length++] = byte;
  }

  private endPacket(): void {
    if (this.discarding) {
      this.reject(this.discarding);
    } else if (this.escaped) {
      this.reject('bad-escape');
    } else if (this.length > 0) {
      const result = decodePacket(this.buffer.subarray(0, this.length), this.maxPayload);
      if (result.ok) {
        this.stats.frames++;
        this.push(result.frame);
      } else {
        this.reject(result.reason);
      }
    }
    // An empty packet (END END) is the fill between frames, not an error.
    this.length = 0;
    this.escaped = false;
    this.discarding = undefined;
  }

  private reject(reason: DropReason): void {
    this.stats.dropped[reason]++;
    this.stats.droppedBytes += this.length;
    const info: DropInfo = { reason, length: this.length };
    this.emit('drop', info);
  }
}
