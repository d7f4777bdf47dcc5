/**
 * A reliable message link over any byte Duplex (a serialport, or one side of
 * createStreamPair): stop-and-wait ARQ over the frames of codec.ts.
 *
 * ```
 *   sender                                   receiver
 *   DATA seq=7 {"v":1,...}  ──────X (noise)
 *        ... ack timeout ...
 *   DATA seq=7 {"v":1,...}  ──────────────▶  new seq: validate, deliver once
 *                           ◀──────X         ACK seq=7   (lost)
 *        ... ack timeout ...
 *   DATA seq=7 {"v":1,...}  ──────────────▶  same seq as last: not delivered again
 *   send() resolves         ◀──────────────  ACK seq=7   (the stored answer, repeated)
 * ```
 *
 * One DATA frame is outstanding per direction; both directions run at once, each with its
 * own seq (0-255, wrapping). A NAK means "arrived intact, refused" (the reason is in its
 * payload) and is final: the message is not retransmitted. Corrupted frames are never
 * answered; the ack timeout covers them. A sender marks its DATA frames SYN until the peer
 * has answered one, so a receiver that still remembers an old session accepts the first
 * frame of a restarted peer. docs/serial-protocol.md has the reasoning and the defaults.
 */
import { randomInt } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import type { z } from 'zod';
import { DEFAULT_MAX_PAYLOAD, encodePacket, wireLength, type Frame } from './codec.js';
import { FrameDecoder, type DecoderStats } from './decoder.js';
import { FrameEncoder } from './encoder.js';
import { SerialLinkError } from './errors.js';
import { iterateMessages } from './message-iterator.js';
import { HostMessage, ReaderMessage, parseMessage, type ParseResult } from './messages.js';
import { systemTimers, type Timers } from '../../common/clock.js';

/** Which end this is: the host (agent's driver) sends HostMessages, the reader ReaderMessages. */
export type LinkRole = 'host' | 'reader';
export type Outgoing<R extends LinkRole> = R extends 'host' ? HostMessage : ReaderMessage;
export type Incoming<R extends LinkRole> = R extends 'host' ? ReaderMessage : HostMessage;

export interface SerialLinkOptions<R extends LinkRole> {
  role: R;
  /** Wait for an ACK beyond the frame's own time on the wire, in ms (default 200). */
  ackTimeoutMs?: number;
  /** Retransmissions after the first transmission before giving up (default 5). */
  maxRetries?: number;
  /** Line speed, to add a frame's transmission time (10 bits a byte) to the timeout (default 115200). */
  baudRate?: number;
  /** Largest payload sent or accepted, in bytes (default 8192). */
  maxPayload?: number;
  /** Messages held for a consumer that is not listening yet, before refusing more (default 1000). */
  maxBacklog?: number;
  /** First seq sent (default random 0-255). */
  initialSeq?: number;
  timers?: Timers;
}

export interface SerialLinkStats {
  /** Messages sent and acknowledged. */
  acknowledged: number;
  /** DATA frames written, first transmissions and retransmissions. */
  transmissions: number;
  retransmissions: number;
  /** Messages received and handed to the application. */
  delivered: number;
  /** Retransmitted DATA frames recognised and answered again, not delivered. */
  duplicates: number;
  /** Received messages refused with a NAK. */
  refused: number;
  /** ACKs and NAKs that answered nothing outstanding (late answers to retransmissions). */
  staleAnswers: number;
  /** The frame decoder's counts, corrupted frames among them. */
  decoder: DecoderStats;
}

export type SerialLinkEvents<In> = {
  /** A valid message, delivered exactly once. */
  message: [message: In];
  /** A received message refused with a NAK. */
  refused: [info: { seq: number; reason: string }];
  /** The link stopped: no error after close(), the reason when the port went away. */
  close: [error?: SerialLinkError];
};

interface Pending {
  payload: Buffer;
  type: string;
  resolve: () => void;
  reject: (error: SerialLinkError) => void;
}

interface Outstanding extends Pending {
  seq: number;
  packet: Buffer;
  timeoutMs: number;
  attempts: number;
  timer?: unknown;
}

const EMPTY = Buffer.alloc(0);

export class SerialLink<R extends LinkRole> extends EventEmitter<SerialLinkEvents<Incoming<R>>> {
  readonly role: R;
  readonly stats: SerialLinkStats;
  private readonly ackTimeoutMs: number;
  private readonly maxRetries: number;
  private readonly baudRate: number;
  private readonly maxPayload: number;
  private readonly maxBacklog: number;
  private readonly timers: Timers;
  private readonly outgoing: z.ZodType<Outgoing<R>>;
  private readonly incoming: z.ZodType<Incoming<R>>;
  private readonly decoder: FrameDecoder;
  private readonly encoder = new FrameEncoder();
  private readonly queue: Pending[] = [];
  private readonly backlog: Incoming<R>[] = [];
  private outstanding: Outstanding | undefined;
  private nextSeq: number;
  /** No answer seen yet from the peer in this session: DATA frames carry SYN. */
  private synPending = true;
  private lastReceived: { seq: number; syn: boolean; answer: Frame } | undefined;
  private closed = false;
  /** 'close' (whatever its argument: net sockets pass a boolean), 'end' or 'error'. */
  private readonly onPortGone = (cause?: unknown) => {
    const detail = cause instanceof Error ? `: ${cause.message}` : '';
    const error = new SerialLinkError('PORT_CLOSED', `the serial port closed${detail}`, {
      cause: cause instanceof Error ? cause : undefined,
    });
    this.shutdown(error);
  };

  constructor(
    private readonly port: Duplex,
    options: SerialLinkOptions<R>,
  ) {
    super();
    this.role = options.role;
    this.ackTimeoutMs = options.ackTimeoutMs ?? 200;
    this.maxRetries = options.maxRetries ?? 5;
    this.baudRate = options.baudRate ?? 115_200;
    this.maxPayload = options.maxPayload ?? DEFAULT_MAX_PAYLOAD;
    this.maxBacklog = options.maxBacklog ?? 1000;
    this.timers = options.timers ?? systemTimers;
    this.nextSeq = (options.initialSeq ?? randomInt(256)) & 0xff;
    const [outgoing, incoming] =
      options.role === 'host' ? [HostMessage, ReaderMessage] : [ReaderMessage, HostMessage];
    this.outgoing = outgoing as unknown as z.ZodType<Outgoing<R>>;
    this.incoming = incoming as unknown as z.ZodType<Incoming<R>>;
    this.decoder = new FrameDecoder({ maxPayload: this.maxPayload });
    this.stats = {
      acknowledged: 0,
      transmissions: 0,
      retransmissions: 0,
      delivered: 0,
      duplicates: 0,
      refused: 0,
      staleAnswers: 0,
      decoder: this.decoder.stats,
    };
    this.decoder.on('data', (frame: Frame) => this.onFrame(frame));
    this.encoder.on('error', (error: Error) => this.onPortGone(error));
    this.encoder.pipe(port, { end: false });
    port.pipe(this.decoder);
    port.once('close', this.onPortGone);
    port.once('end', this.onPortGone);
    port.once('error', this.onPortGone);
    (this as EventEmitter).on('newListener', (event: string | symbol) => {
      if (event === 'message') queueMicrotask(() => this.flushBacklog());
    });
  }

  /**
   * Sends one message; resolves when the peer acknowledges it. Rejects with a
   * SerialLinkError: INVALID_MESSAGE or PAYLOAD_TOO_LARGE (nothing sent), REJECTED (the
   * peer refused it), ACK_TIMEOUT (no answer: delivery unknown), LINK_CLOSED, PORT_CLOSED.
   * Messages are sent one at a time in the order of the calls.
   */
  send(message: Outgoing<R>): Promise<void> {
    if (this.closed) {
      return Promise.reject(new SerialLinkError('LINK_CLOSED', 'the serial link is closed'));
    }
    const parsed = parseMessage(this.outgoing, message);
    if (!parsed.ok) {
      return Promise.reject(
        new SerialLinkError(
          'INVALID_MESSAGE',
          `not a valid ${this.role} message: ${parsed.reason}`,
          {
            reason: parsed.reason,
          },
        ),
      );
    }
    const payload = Buffer.from(JSON.stringify(parsed.message), 'utf8');
    if (payload.length > this.maxPayload) {
      return Promise.reject(
        new SerialLinkError(
          'PAYLOAD_TOO_LARGE',
          `${parsed.message.type} is ${payload.length} bytes of JSON, over the ${this.maxPayload} byte limit`,
        ),
      );
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ payload, type: parsed.message.type, resolve, reject });
      this.pump();
    });
  }

  /** Received messages in order; ends when the link closes. */
  messages(): AsyncIterableIterator<Incoming<R>> {
    return iterateMessages<Incoming<R>>(this as EventEmitter, this.closed);
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<Incoming<R>> {
    return this.messages();
  }

  /**
   * Stops the link: pending sends reject with LINK_CLOSED, answers already queued are
   * written out, and the port is let go (not closed: its owner closes it).
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.shutdown(undefined);
    if (!this.port.destroyed && this.port.writable) {
      const port = this.port;
      const encoder = this.encoder;
      await new Promise<void>((resolve) => {
        const done = () => {
          encoder.off('end', done);
          port.off('close', done);
          resolve();
        };
        encoder.once('end', done);
        port.once('close', done);
        encoder.end();
      });
    }
    this.encoder.unpipe(this.port);
  }

  // ---- sending ----

  private pump(): void {
    if (this.closed || this.outstanding) return;
    const next = this.queue.shift();
    if (!next) return;
    const seq = this.nextSeq;
    this.nextSeq = (seq + 1) & 0xff;
    const packet = encodePacket({ type: 'DATA', seq, syn: this.synPending, payload: next.payload });
    const wireMs = Math.ceil((wireLength(packet) * 10 * 1000) / this.baudRate);
    this.outstanding = { ...next, seq, packet, timeoutMs: this.ackTimeoutMs + wireMs, attempts: 0 };
    this.transmit(this.outstanding);
  }

  private transmit(out: Outstanding): void {
    out.attempts++;
    this.stats.transmissions++;
    if (out.attempts > 1) this.stats.retransmissions++;
    this.encoder.write(out.packet);
    out.timer = this.timers.setTimeout(() => this.onAckTimeout(out), out.timeoutMs);
  }

  private onAckTimeout(out: Outstanding): void {
    if (this.outstanding !== out) return;
    if (out.attempts <= this.maxRetries) {
      this.transmit(out);
      return;
    }
    this.outstanding = undefined;
    out.reject(
      new SerialLinkError(
        'ACK_TIMEOUT',
        `no answer from the peer to ${out.type} (seq ${out.seq}) after ${out.attempts} transmissions ` +
          `${out.timeoutMs} ms apart; it may or may not have been delivered`,
      ),
    );
    this.pump();
  }

  private onAnswer(frame: Frame): void {
    const out = this.outstanding;
    if (!out || frame.seq !== out.seq) {
      this.stats.staleAnswers++;
      return;
    }
    this.timers.clearTimeout(out.timer);
    this.outstanding = undefined;
    this.synPending = false;
    if (frame.type === 'ACK') {
      this.stats.acknowledged++;
      out.resolve();
    } else {
      const reason = nakReason(frame.payload);
      out.reject(
        new SerialLinkError('REJECTED', `the peer refused ${out.type}: ${reason}`, { reason }),
      );
    }
    this.pump();
  }

  // ---- receiving ----

  private onFrame(frame: Frame): void {
    if (this.closed) return;
    if (frame.type === 'DATA') this.onData(frame);
    else this.onAnswer(frame);
  }

  private onData(frame: Frame): void {
    const syn = frame.syn === true;
    const last = this.lastReceived;
    if (last && last.seq === frame.seq && (!syn || last.syn)) {
      this.stats.duplicates++;
      this.encoder.write(last.answer);
      return;
    }
    let result: ParseResult<Incoming<R>> = this.parse(frame.payload);
    if (
      result.ok &&
      this.backlog.length >= this.maxBacklog &&
      this.listenerCount('message') === 0
    ) {
      result = { ok: false, reason: `receiver backlog full (${this.maxBacklog} unread messages)` };
    }
    const answer: Frame = result.ok
      ? { type: 'ACK', seq: frame.seq, payload: EMPTY }
      : { type: 'NAK', seq: frame.seq, payload: nakPayload(result.reason, this.maxPayload) };
    this.lastReceived = { seq: frame.seq, syn, answer };
    this.encoder.write(answer);
    if (result.ok) {
      this.stats.delivered++;
      this.deliver(result.message);
    } else {
      this.stats.refused++;
      this.emit('refused', { seq: frame.seq, reason: result.reason });
    }
  }

  private parse(payload: Buffer): ParseResult<Incoming<R>> {
    let value: unknown;
    try {
      value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(payload));
    } catch (error) {
      return { ok: false, reason: `payload is not UTF-8 JSON: ${(error as Error).message}` };
    }
    return parseMessage(this.incoming, value);
  }

  /** Hands a message to the listeners, or holds it (in order) until one is attached. */
  private deliver(message: Incoming<R>): void {
    this.backlog.push(message);
    this.flushBacklog();
  }

  private flushBacklog(): void {
    while (this.backlog.length > 0 && this.listenerCount('message') > 0) {
      this.emit('message', this.backlog.shift() as Incoming<R>);
    }
  }

  // ---- ending ----

  private shutdown(error: SerialLinkError | undefined): void {
    if (this.closed) return;
    this.closed = true;
    const failure = error ?? new SerialLinkError('LINK_CLOSED', 'the serial link was closed');
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
    this.port.unpipe(this.decoder);
    this.decoder.destroy();
    if (error) this.encoder.unpipe(this.port);
    this.emit('close', error);
  }
}

/** `{"reason": ...}`, the reason cut to fit the payload limit (JSON escaping at most 6x). */
function nakPayload(reason: string, maxPayload: number): Buffer {
  const room = Math.max(0, Math.min(1000, Math.floor((maxPayload - 16) / 6)));
  return Buffer.from(JSON.stringify({ reason: reason.slice(0, room) }), 'utf8');
}

function nakReason(payload: Buffer): string {
  try {
    const { reason } = JSON.parse(payload.toString('utf8')) as { reason?: unknown };
    if (typeof reason === 'string') return reason;
  } catch {
    // fall through
  }
  return 'no reason given';
}
