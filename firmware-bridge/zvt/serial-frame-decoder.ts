/**
 * ZVT serial bytes to frames and link answers, as a stream Transform (writable side bytes,
 * readable side objectMode), in the manner of `@serialport/parser-*`. It never emits
 * 'error' for what arrives on the line: damage is reported as a unit or counted.
 *
 * ```
 *   ..noise.. 06 | 10 02 06 0F 00 10 03 C6 33 | 15 | 10 02 04 FF … (half) 10 02 80 00 00 10 03 F5 1F
 *   ignored   ack  └──────── frame ──────────┘  nak  └ dropped at the next 10 02 ┘ └──── frame ────┘
 * ```
 *
 * Units pushed: `{ type: 'frame', apdu }` (CRC good), `{ type: 'bad-frame', reason }` (a
 * complete frame to answer with NAK: `crc`, a DLE followed by anything but 10/03/02
 * (`escape`), or more than `maxApduLength` bytes (`oversize`)), `{ type: 'ack' }` and
 * `{ type: 'nak' }` (06 and 15 between frames). Noise between frames and half frames (a
 * new 10 02 before the 10 03) are counted in `stats` and announced with a `'drop'` event;
 * they get no answer, the sender's ACK timeout covers them.
 *
 * Options (defaults): `maxApduLength` (16384): bytes kept of one frame, so a line that never
 * sends 10 03 cannot grow memory. `reset()` drops a half frame: the link calls it when the
 * line has been silent mid-frame for its frame timeout.
 */
import { Transform, type TransformCallback } from 'node:stream';
import { frameCrc } from './crc.js';
import { ACK, DLE, ETX, NAK, STX } from './serial-frame-encoder.js';

export const DEFAULT_MAX_APDU_LENGTH = 16_384;

export type BadFrameReason = 'crc' | 'escape' | 'oversize';

export type SerialUnit =
  | { type: 'frame'; apdu: Buffer }
  | { type: 'bad-frame'; reason: BadFrameReason }
  | { type: 'ack' }
  | { type: 'nak' };

export interface ZvtFrameDecoderOptions {
  /** Largest APDU accepted, in bytes (default 16384). */
  maxApduLength?: number;
}

export interface SerialDecoderStats {
  frames: number;
  badFrames: Record<BadFrameReason, number>;
  /** Frames cut by a new 10 02 or by reset(). */
  halfFrames: number;
  /** Bytes between frames that were neither 06, 15 nor a frame start. */
  noiseBytes: number;
  acks: number;
  naks: number;
}

export interface DropInfo {
  reason: 'noise' | 'half-frame';
  bytes: number;
}

type State = 'hunt' | 'hunt-dle' | 'data' | 'data-dle' | 'crc-lo' | 'crc-hi';

export class ZvtFrameDecoder extends Transform {
  readonly maxApduLength: number;
  readonly stats: SerialDecoderStats = {
    frames: 0,
    badFrames: { crc: 0, escape: 0, oversize: 0 },
    halfFrames: 0,
    noiseBytes: 0,
    acks: 0,
    naks: 0,
  };
  private readonly buffer: Buffer;
  private length = 0;
  private state: State = 'hunt';
  private damage: BadFrameReason | undefined;
  private crcLow = 0;
  /** Bytes of the frame received so far, stored or not (for drop reports). */
  private seen = 0;

  constructor(options: ZvtFrameDecoderOptions = {}) {
    super({ readableObjectMode: true });
    this.maxApduLength = options.maxApduLength ?? DEFAULT_MAX_APDU_LENGTH;
    this.buffer = Buffer.alloc(this.maxApduLength);
  }

  /** Whether a frame is partly received. */
  get inFrame(): boolean {
    return this.state !== 'hunt' && this.state !== 'hunt-dle';
  }

  /** Drops a half-received frame (the line went silent mid-frame). */
  reset(): void {
    if (this.inFrame) this.dropHalfFrame();
    this.state = 'hunt';
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    for (const byte of chunk) this.step(byte);
    callback();
  }

  override _flush(callback: TransformCallback): void {
    this.reset();
    callback();
  }

  private step(byte: number): void {
    switch (this.state) {
      case 'hunt':
        if (byte === DLE) this.state = 'hunt-dle';
        else if (byte === ACK) this.unit({ type: 'ack' });
        else if (byte === NAK) this.unit({ type: 'nak' });
        else this.noise(1);
        return;
      case 'hunt-dle':
        if (byte === STX) return this.startFrame();
        this.noise(1);
        this.state = 'hunt';
        return this.step(byte);
      case 'data':
        this.seen++;
        if (byte === DLE) this.state = 'data-dle';
        else this.append(byte);
        return;
      case 'data-dle':
        this.seen++;
        if (byte === DLE) {
          this.append(DLE);
          this.state = 'data';
        } else if (byte === ETX) {
          this.state = 'crc-lo';
        } else if (byte === STX) {
          this.seen -= 2; // this 10 02 starts the next frame
          this.dropHalfFrame();
          this.startFrame();
        } else {
          this.damage ??= 'escape';
          this.state = 'data';
        }
        return;
      case 'crc-lo':
        this.crcLow = byte;
        this.state = 'crc-hi';
        return;
      case 'crc-hi':
        this.state = 'hunt';
        return this.endFrame(this.crcLow | (byte << 8));
    }
  }

  private startFrame(): void {
    this.state = 'data';
    this.length = 0;
    this.seen = 2;
    this.damage = undefined;
  }

  private append(byte: number): void {
    if (this.length === this.buffer.length) {
      this.damage ??= 'oversize';
      return;
    }
    this.buffer[this.length++] = byte;
  }

  private endFrame(crc: number): void {
    const apdu = this.buffer.subarray(0, this.length);
    const reason = this.damage ?? (frameCrc(apdu) === crc ? undefined : 'crc');
    if (reason) {
      this.stats.badFrames[reason]++;
      this.push({ type: 'bad-frame', reason });
      return;
    }
    this.stats.frames++;
    this.push({ type: 'frame', apdu: Buffer.from(apdu) });
  }

  private unit(unit: { type: 'ack' } | { type: 'nak' }): void {
    if (unit.type === 'ack') this.stats.acks++;
    else this.stats.naks++;
    this.push(unit);
  }

  private noise(bytes: number): void {
    this.stats.noiseBytes += bytes;
    const info: DropInfo = { reason: 'noise', bytes };
    this.emit('drop', info);
  }

  private dropHalfFrame(): void {
    this.stats.halfFrames++;
    const info: DropInfo = { reason: 'half-frame', bytes: this.seen };
    this.emit('drop', info);
  }
}
