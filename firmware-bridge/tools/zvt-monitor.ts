/**
 * The line monitor for ZVT: decodes what passes and prints one line per APDU, link byte or
 * damaged frame, as the native monitor (monitor.ts) does for the card-reader protocol.
 *
 * - Serial framing (`serial`): DLE STX … DLE ETX frames with their CRC, the one-byte link
 *   answers ACK (06) and NAK (15), damaged frames and noise.
 * - TCP (`tcp`): APDUs back to back, cut at the lengths their headers announce.
 *
 * Who sent a message is known from its control field (a command: the ECR; 04 xx, 06 0F,
 * 06 1E, 06 D1, 06 D3: the PT); acknowledgements, link bytes and damage are attributed to
 * the sender last recognised on that direction (between two ports, also from the other
 * direction: the opposite role); `peer` until then. A 06 0F is read in the context of the
 * last command seen (after 05 01 it carries the software version and terminal status);
 * after a command the codec does not know, it is shown by its data.
 */
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { controlName } from '../zvt/apdu.js';
import type { EcrCommand } from '../zvt/message-types.js';
import { isCommand } from '../zvt/messages.js';
import { ZvtFrameDecoder, type DropInfo, type SerialUnit } from '../zvt/serial-frame-decoder.js';
import { ApduSplitter, type SplitterDrop } from '../zvt/tcp-splitter.js';
import { monitorLine } from './frame-text.js';
import { apduText, type ZvtSender } from './zvt-frame-text.js';

export type ZvtFraming = 'serial' | 'tcp';

export interface ZvtMonitorOptions {
  print: (line: string) => void;
  /** Serial framing (default) or TCP (plain APDUs). */
  framing?: ZvtFraming;
  /** Print long texts whole (default: cut at 60 characters). */
  full?: boolean;
  /** Print each line as a JSON object ({at, from, to, route, text}) instead of text. */
  json?: boolean;
  now?: () => Date;
}

/**
 * What both directions of one conversation know: the command running, or the control field
 * of one the codec does not know (its 06 0F is then shown by its data, not misread).
 */
interface Conversation {
  command?: EcrCommand['type'];
  unknown?: string;
}

/** One direction of the line: bytes in, a printed line per unit. */
export class ZvtLineTap {
  apdus = 0;
  badFrames = 0;
  drops = 0;
  sender: ZvtSender | undefined;
  /** The tap of the opposite direction, when there are two ports. */
  opposite: ZvtLineTap | undefined;
  private readonly input: ZvtFrameDecoder | ApduSplitter;
  private noiseBytes = 0;

  constructor(
    private readonly options: ZvtMonitorOptions,
    /** Which way the bytes go, when there are two ports: `A→B`. */
    private readonly route?: string,
    private readonly conversation: Conversation = {},
  ) {
    if (options.framing === 'tcp') {
      const splitter = new ApduSplitter();
      splitter.on('data', (apdu: Buffer) => this.onApdu(apdu));
      splitter.on('drop', (drop: SplitterDrop) => {
        this.drops++;
        this.print(`drop ${drop.reason} APDU (${drop.bytes} bytes)`);
      });
      this.input = splitter;
    } else {
      const decoder = new ZvtFrameDecoder();
      decoder.on('data', (unit: SerialUnit) => this.onUnit(unit));
      decoder.on('drop', (drop: DropInfo) => this.onDrop(drop));
      this.input = decoder;
    }
  }

  write(chunk: Buffer): void {
    this.input.write(chunk);
    // Noise arrives byte by byte: one line for a run of it.
    queueMicrotask(() => this.flushNoise());
  }

  private onUnit(unit: SerialUnit): void {
    this.flushNoise();
    switch (unit.type) {
      case 'frame':
        return this.onApdu(unit.apdu);
      case 'ack':
        return this.print('link ACK (06)');
      case 'nak':
        return this.print('link NAK (15)');
      case 'bad-frame':
        this.badFrames++;
        return this.print(`bad frame (${unit.reason}): the receiver should answer NAK`);
    }
  }

  private onDrop(drop: DropInfo): void {
    if (drop.reason === 'noise') {
      this.noiseBytes += drop.bytes;
      return;
    }
    this.flushNoise();
    this.drops++;
    this.print(`drop half frame (${drop.bytes} bytes)`);
  }

  private flushNoise(): void {
    if (this.noiseBytes === 0) return;
    const bytes = this.noiseBytes;
    this.noiseBytes = 0;
    this.drops++;
    this.print(`drop noise (${bytes} bytes)`);
  }

  private onApdu(apdu: Buffer): void {
    this.apdus++;
    const { text, sender, message } = apduText(
      apdu,
      { command: this.conversation.command },
      this.options.full,
      this.conversation.unknown === undefined ? {} : { answers: this.conversation.unknown },
    );
    if (message && isCommand(message)) {
      // 06 B0 interrupts the running command, whose end still follows.
      if (message.type !== 'abort-command') {
        this.conversation.command = message.type;
        delete this.conversation.unknown;
      }
    } else if (sender === 'ecr') {
      delete this.conversation.command;
      this.conversation.unknown = controlName({ cls: apdu[0] ?? 0, ins: apdu[1] ?? 0 });
    }
    if (sender) {
      this.sender = sender;
      if (this.opposite) this.opposite.sender = sender === 'ecr' ? 'pt' : 'ecr';
    }
    this.print(text);
  }

  private print(text: string): void {
    const to = this.sender && (this.sender === 'ecr' ? 'pt' : 'ecr');
    const at = (this.options.now ?? (() => new Date()))();
    const { json } = this.options;
    const line = { at, from: this.sender, to, route: this.route, text, json, whoWidth: 6 };
    this.options.print(monitorLine(line));
  }
}

/** Listens on one port without answering. */
export function monitorZvtPort(port: Duplex, options: ZvtMonitorOptions): ZvtLineTap {
  const tap = new ZvtLineTap(options);
  port.on('data', (chunk: Buffer) => tap.write(chunk));
  return tap;
}

/** Forwards bytes both ways between `a` and `b`, decoding each direction. */
export function monitorZvtBetween(
  a: Duplex,
  b: Duplex,
  options: ZvtMonitorOptions & { names?: [string, string] },
): { aToB: ZvtLineTap; bToA: ZvtLineTap } {
  const [nameA, nameB] = options.names ?? ['A', 'B'];
  const conversation: Conversation = {};
  const aToB = new ZvtLineTap(options, `${nameA}→${nameB}`, conversation);
  const bToA = new ZvtLineTap(options, `${nameB}→${nameA}`, conversation);
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

export interface ZvtTcpRelay {
  /** Where ECRs connect: the port the system chose when 0 was asked for. */
  host: string;
  port: number;
  close(): Promise<void>;
}

/**
 * The monitor in the middle of ZVT over TCP: listens where the ECR connects, opens a
 * connection to the PT for each ECR connection, forwards both ways and decodes (`A` is the
 * PT, `B` the ECR, as `monitor --between PT ECR` on serial ports). An ECR whose PT cannot
 * be reached is disconnected, and the monitor says why.
 */
export async function relayZvtTcp(
  listen: { host: string; port: number },
  target: { host: string; port: number },
  options: Omit<ZvtMonitorOptions, 'framing'> & { log: (line: string) => void },
): Promise<ZvtTcpRelay> {
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server = net.createServer({ noDelay: true }, (ecr) => {
    track(ecr);
    ecr.pause();
    const pt = net.connect({ host: target.host, port: target.port, noDelay: true });
    track(pt);
    pt.once('error', (error) => {
      options.log(`cannot reach the PT at ${target.host}:${target.port}: ${error.message}`);
      ecr.destroy();
    });
    pt.once('connect', () => {
      options.log(`ECR ${ecr.remoteAddress ?? '?'}:${ecr.remotePort ?? '?'} connected`);
      monitorZvtBetween(pt, ecr, { ...options, framing: 'tcp', names: ['A', 'B'] });
      ecr.resume();
      ecr.once('close', () => pt.destroy());
      pt.once('close', () => ecr.destroy());
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listen.port, listen.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    host: listen.host,
    port: (server.address() as net.AddressInfo).port,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
