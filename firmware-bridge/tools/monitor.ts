/**
 * The line monitor: decodes frames as they pass and prints one line each.
 *
 * - On one port (`monitorPort`) it hears only what the device at the other end sends, and
 *   it answers nothing, so that device soon retransmits and gives up. Use it to see whether
 *   a device talks at all, and what.
 * - Between two ports (`monitorBetween`) it forwards every byte both ways unchanged and
 *   decodes each direction on its own: put it in the middle (host ⇄ A, monitor, B ⇄ reader)
 *   to watch a real conversation.
 *
 * Who sent a frame is known from its message (a host message or a reader message); ACKs,
 * NAKs and damaged frames are attributed to the sender last recognised on that direction
 * (between two ports, also from the other direction: the opposite role). `peer` until then.
 */
import type { Duplex } from 'node:stream';
import type { Frame } from '../serial/codec.js';
import { FrameDecoder, type DropInfo } from '../serial/decoder.js';
import { dropText, frameText, monitorLine, senderOf, type Sender } from './frame-text.js';

export interface MonitorOptions {
  print: (line: string) => void;
  /** Print long strings (receipts) whole (default: cut at 60 characters). */
  full?: boolean;
  /** Print each line as a JSON object ({at, from, to, route, text}) instead of text. */
  json?: boolean;
  now?: () => Date;
}

/** One direction of the line: bytes in, a printed line per frame or dropped packet. */
export class LineTap {
  readonly decoder = new FrameDecoder();
  frames = 0;
  drops = 0;
  sender: Sender | undefined;
  /** The tap of the opposite direction, when there are two ports. */
  opposite: LineTap | undefined;

  constructor(
    private readonly options: MonitorOptions,
    /** Which way the bytes go, when there are two ports: `A→B`. */
    private readonly route?: string,
  ) {
    this.decoder.on('data', (frame: Frame) => this.onFrame(frame));
    this.decoder.on('drop', (drop: DropInfo) => {
      this.drops++;
      this.print(dropText(drop));
    });
  }

  write(chunk: Buffer): void {
    this.decoder.write(chunk);
  }

  private onFrame(frame: Frame): void {
    this.frames++;
    const sender = senderOf(frame);
    if (sender) {
      this.sender = sender;
      if (this.opposite) this.opposite.sender = sender === 'host' ? 'reader' : 'host';
    }
    this.print(frameText(frame, this.options.full));
  }

  private print(text: string): void {
    const to = this.sender && (this.sender === 'host' ? 'reader' : 'host');
    const at = (this.options.now ?? (() => new Date()))();
    const { json } = this.options;
    const line = { at, from: this.sender, to, route: this.route, text, json, whoWidth: 11 };
    this.options.print(monitorLine(line));
  }
}

/** Listens on one port without answering. */
export function monitorPort(port: Duplex, options: MonitorOptions): LineTap {
  const tap = new LineTap(options);
  port.on('data', (chunk: Buffer) => tap.write(chunk));
  return tap;
}

/** Forwards bytes both ways between `a` and `b`, decoding each direction. */
export function monitorBetween(
  a: Duplex,
  b: Duplex,
  options: MonitorOptions & { names?: [string, string] },
): { aToB: LineTap; bToA: LineTap } {
  const [nameA, nameB] = options.names ?? ['A', 'B'];
  const aToB = new LineTap(options, `${nameA}→${nameB}`);
  const bToA = new LineTap(options, `${nameB}→${nameA}`);
  aToB.opposite = bToA;
  bToA.opposite = aToB;
  a.on('data', (chunk: Buffer) => {
    b.write(chunk);
    aToB.write(chunk);
  });
  b.on('data', (chunk: Buffer) => {
    a.write(chunk);
    bToA.write(chunk);
  });
  return { aToB, bToA };
}
