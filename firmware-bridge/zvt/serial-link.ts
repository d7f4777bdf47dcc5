/**
 * A ZVT serial link over any byte Duplex (a serialport, a pty, one end of a stream pair):
 * APDUs in DLE STX … DLE ETX frames, each answered by the receiver with one byte, ACK (06)
 * or NAK (15). The same class serves the ECR and the PT end: the link layer is symmetric.
 *
 * ```
 *   sender                                        receiver
 *   10 02 <APDU> 10 03 crc  ─────X (noise)
 *        … ACK timeout …
 *   10 02 <APDU> 10 03 crc  ──────────────────▶   CRC good: deliver
 *                           ◀──────────────────   06
 *   10 02 <APDU'> 10 03 crc ──────────────────▶   CRC bad
 *                           ◀──────────────────   15
 *   10 02 <APDU'> 10 03 crc ──────────────────▶   (retransmitted at once on NAK)
 * ```
 *
 * One frame is outstanding at a time; a frame that gets neither ACK nor NAK within
 * `ackTimeoutMs` (plus its time on the wire) is sent again, at most `maxRetries` times.
 * The notes give no spec limit: EP sends 3 times, ET waits about 1 s for the ACK, so the
 * defaults are 2 retries and 1000 ms.
 *
 * Liberal in what it accepts:
 * - Ingenico PTs sometimes send no ACK byte (§2.1): while a frame waits for its ACK, a valid
 *   frame from the peer counts as one (`implicitAck`, default on), since ZVT is strictly
 *   turn-taking and the peer only answers what it received.
 * - A frame repeated byte for byte before this side sent any frame is the peer's
 *   retransmission after a lost ACK: it is acknowledged again but not delivered twice. Every
 *   ZVT message is answered by a message, so two equal messages in a row never happen.
 * - A frame cut off by silence longer than `frameTimeoutMs` is dropped, so the next frame is
 *   read cleanly.
 */
import { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import { systemTimers, type Timers } from '../../common/clock.js';
import type { ApduChannel, ApduChannelEvents } from './channel.js';
import { ZvtError } from './errors.js';
import {
  DEFAULT_MAX_APDU_LENGTH,
  ZvtFrameDecoder,
  type DropInfo,
  type SerialDecoderStats,
  type SerialUnit,
} from './serial-frame-decoder.js';
import { ZvtFrameEncoder, frameApdu } from './serial-frame-encoder.js';

export interface ZvtSerialLinkOptions {
  /** Wait for ACK/NAK after a frame's last byte, in ms (default 1000, ET). */
  ackTimeoutMs?: number;
  /** Retransmissions after the first send, on NAK or ACK timeout (default 2: EP's 3 sends). */
  maxRetries?: number;
  /** Line speed, to add a frame's time on the wire (11 bits a byte, 8N2) to the timeout (default 9600). */
  baudRate?: number;
  /** Silence inside a frame after which it is dropped, in ms (default 1000, EP's T1). */
  frameTimeoutMs?: number;
  /** Largest APDU sent or accepted (default 16384). */
  maxApduLength?: number;
  /** A peer's frame while waiting for an ACK counts as the ACK (default true). */
  implicitAck?: boolean;
  timers?: Timers;
}

export interface ZvtSerialLinkStats {
  /** Frames sent and acknowledged (explicitly or implicitly). */
  acknowledged: number;
  implicitAcks: number;
  transmissions: number;
  retransmissions: number;
  naksReceived: number;
  /** Frames received and delivered. */
  delivered: number;
  /** Retransmitted frames recognised, acknowledged again and not delivered. */
  duplicates: number;
  /** Damaged frames answered with NAK. */
  naksSent: number;
  /** ACK/NAK bytes that answered nothing outstanding. */
  staleAnswers: number;
  decoder: SerialDecoderStats;
}

interface Pending {
  apdu: Buffer;
  resolve: () => void;
  reject: (error: ZvtError) => void;
}

interface Outstanding extends Pending {
  attempts: number;
  timeoutMs: number;
  timer?: unknown;
}

export class ZvtSerialLink extends EventEmitter<ApduChannelEvents> implements ApduChannel {
  readonly stats: ZvtSerialLinkStats;
  private readonly ackTimeoutMs: number;
  private readonly maxRetries: number;
  private readonly baudRate: number;
  private readonly frameTimeoutMs: number;
  private readonly maxApduLength: number;
  private readonly implicitAck: boolean;
  private readonly timers: Timers;
  private readonly decoder: ZvtFrameDecoder;
  private readonly encoder = new ZvtFrameEncoder();
  private readonly queue: Pending[] = [];
  private outstanding: Outstanding | undefined;
  private lastReceived: Buffer | undefined;
  private frameTimer: unknown;
  private closedFlag = false;
  private readonly onPortGone = (cause?: unknown) => {
    const detail = cause instanceof Error ? `: ${cause.message}` : '';
    this.shutdown(new ZvtError('PORT_CLOSED', `the serial line closed${detail}`, { cause }));
  };
  private readonly onBytes = () => this.armFrameTimer();

  constructor(
    private readonly port: Duplex,
    options: ZvtSerialLinkOptions = {},
  ) {
    super();
    this.ackTimeoutMs = options.ackTimeoutMs ?? 1000;
    this.maxRetries = options.maxRetries ?? 2;
    this.baudRate = options.baudRate ?? 9600;
    this.frameTimeoutMs = options.frameTimeoutMs ?? 1000;
    this.maxApduLength = options.maxApduLength ?? DEFAULT_MAX_APDU_LENGTH;
    this.implicitAck = options.implicitAck ?? true;
    this.timers = options.timers ?? systemTimers;
    this.decoder = new ZvtFrameDecoder({ maxApduLength: this.maxApduLength });
    this.stats = {
      acknowledged: 0,
      implicitAcks: 0,
      transmissions: 0,
      retransmissions: 0,
      naksReceived: 0,
      delivered: 0,
      duplicates: 0,
      naksSent: 0,
      staleAnswers: 0,
      decoder: this.decoder.stats,
    };
    this.decoder.on('data', (unit: SerialUnit) => this.onUnit(unit));
    this.decoder.on('drop', (info: DropInfo) => this.emit('drop', info));
    this.encoder.on('error', (error: Error) => this.onPortGone(error));
    this.encoder.pipe(port, { end: false });
    port.on('data', this.onBytes);
    port.pipe(this.decoder);
    port.once('close', this.onPortGone);
    port.once('end', this.onPortGone);
    port.once('error', this.onPortGone);
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  send(apdu: Buffer): Promise<void> {
    if (this.closedFlag) return Promise.reject(new ZvtError('CLOSED', 'the serial link is closed'));
    if (apdu.length > this.maxApduLength) {
      return Promise.reject(
        new ZvtError(
          'APDU_TOO_LARGE',
          `an APDU of ${apdu.length} bytes exceeds ${this.maxApduLength}`,
        ),
      );
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ apdu, resolve, reject });
      this.pump();
    });
  }

  /** Stops the link: pending sends reject with CLOSED, written bytes are flushed, the port stays open. */
  async close(): Promise<void> {
    if (this.closedFlag) return;
    this.shutdown(undefined);
    if (!this.port.destroyed && this.port.writable) {
      await new Promise<void>((resolve) => {
        const done = () => {
          this.encoder.off('end', done);
          this.port.off('close', done);
          resolve();
        };
        this.encoder.once('end', done);
        this.port.once('close', done);
        this.encoder.end();
      });
    }
    this.encoder.unpipe(this.port);
  }

  // ---- sending ----

  private pump(): void {
    if (this.closedFlag || this.outstanding) return;
    const next = this.queue.shift();
    if (!next) return;
    const wireMs = Math.ceil((frameApdu(next.apdu).length * 11 * 1000) / this.baudRate);
    this.outstanding = { ...next, attempts: 0, timeoutMs: this.ackTimeoutMs + wireMs };
    // A frame sent: a repeat of the last received frame is a new message from now on.
    this.lastReceived = undefined;
    this.transmit(this.outstanding);
  }

  private transmit(out: Outstanding): void {
    out.attempts++;
    this.stats.transmissions++;
    if (out.attempts > 1) this.stats.retransmissions++;
    this.encoder.write(out.apdu);
    out.timer = this.timers.setTimeout(() => this.retry(out, 'no ACK'), out.timeoutMs);
  }

  private retry(out: Outstanding, why: 'no ACK' | 'NAK'): void {
    if (this.outstanding !== out) return;
    this.timers.clearTimeout(out.timer);
    if (out.attempts <= this.maxRetries) return this.transmit(out);
    this.outstanding = undefined;
    out.reject(
      new ZvtError(
        'NO_LINK_ACK',
        `the peer did not acknowledge the frame after ${out.attempts} sends (last: ${why}); it may or may not have arrived`,
      ),
    );
    this.pump();
  }

  private acknowledged(implicit: boolean): void {
    const out = this.outstanding;
    if (!out) return;
    this.timers.clearTimeout(out.timer);
    this.outstanding = undefined;
    this.stats.acknowledged++;
    if (implicit) this.stats.implicitAcks++;
    out.resolve();
    this.pump();
  }

  // ---- receiving ----

  private onUnit(unit: SerialUnit): void {
    if (this.closedFlag) return;
    this.disarmFrameTimer();
    switch (unit.type) {
      case 'ack':
        if (this.outstanding) this.acknowledged(false);
        else this.stats.staleAnswers++;
        return;
      case 'nak':
        if (!this.outstanding) {
          this.stats.staleAnswers++;
          return;
        }
        this.stats.naksReceived++;
        return this.retry(this.outstanding, 'NAK');
      case 'bad-frame':
        this.stats.naksSent++;
        this.encoder.write('NAK');
        return;
      case 'frame':
        return this.onFrame(unit.apdu);
    }
  }

  private onFrame(apdu: Buffer): void {
    this.encoder.write('ACK');
    if (this.outstanding && this.implicitAck) this.acknowledged(true);
    if (this.lastReceived?.equals(apdu)) {
      this.stats.duplicates++;
      return;
    }
    this.lastReceived = apdu;
    this.stats.delivered++;
    this.emit('apdu', apdu);
  }

  /** While a frame is partly received, silence longer than frameTimeoutMs drops it. */
  private armFrameTimer(): void {
    queueMicrotask(() => {
      this.disarmFrameTimer();
      if (this.closedFlag || !this.decoder.inFrame) return;
      this.frameTimer = this.timers.setTimeout(() => {
        this.frameTimer = undefined;
        this.decoder.reset();
      }, this.frameTimeoutMs);
    });
  }

  private disarmFrameTimer(): void {
    if (this.frameTimer === undefined) return;
    this.timers.clearTimeout(this.frameTimer);
    this.frameTimer = undefined;
  }

  // ---- ending ----

  private shutdown(error: ZvtError | undefined): void {
    if (this.closedFlag) return;
    this.closedFlag = true;
    this.disarmFrameTimer();
    const failure = error ?? new ZvtError('CLOSED', 'the serial link was closed');
    const out = this.outstanding;
    this.outstanding = undefined;
    if (out) {
      this.timers.clearTimeout(out.timer);
      out.reject(failure);
    }
    for (const pending of this.queue.splice(0)) pending.reject(failure);
    this.port.off('close', this.onPortGone);
    this.port.off('end', this.onPortGone);
    this.port.off('error', this.onPortGone);
    this.port.off('data', this.onBytes);
    this.port.unpipe(this.decoder);
    this.decoder.destroy();
    if (error) this.encoder.unpipe(this.port);
    this.emit('close', error);
  }
}
