/**
 * An emulated ESC/POS receipt printer, on the device side of any Duplex: it parses the
 * stream (ESC @, GS v 0, ESC d, ESC J, GS V, DLE EOT, GS r, text), answers status queries,
 * and keeps each printed receipt (everything up to a cut) as a 1-bit raster, which
 * rasterToPng renders for inspection. Tests and bench tools set it to paper out, cover
 * open or a fault, or give it only so much paper.
 *
 * Like a real printer it stops taking commands while offline and keeps what arrives; it
 * still answers DLE EOT then, by scanning the held bytes for `10 04 n`, so (also like a
 * real printer) such a sequence inside held raster data is answered and lost. Printing is
 * instant: a GS r after a job is answered as soon as the job has been taken.
 */
import { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import { parseCommand, type EscPosCommand } from './escpos-parser.js';
import { DLE, EOT } from './escpos.js';
import { blankRaster, checkHeadWidth, type Raster } from './png-raster.js';

export interface EmulatedPrinterOptions {
  /** Head width in dots (default 384). */
  headWidth?: number;
  /** Dot rows of paper left on the roll (default unlimited); running out stops printing. */
  paperRows?: number;
  /** Answer DLE EOT (default true). False emulates a write-only link. */
  answersRealtimeStatus?: boolean;
  /** Answer GS r (default true). False emulates printers and interfaces that ignore it. */
  answersTransmitStatus?: boolean;
}

/** One receipt: what was printed up to a cut. */
export interface PrintedJob {
  /** The dots printed, head wide, one row per raster row received. */
  raster: Raster;
  cut: 'full' | 'partial';
  /** GS v 0 commands received. */
  bands: number;
  /** Lines fed with ESC d and dots fed with ESC J, before the cut. */
  feedLines: number;
  feedDots: number;
  /** Text bytes received (latin1), with LF as '\n'. */
  text: string;
}

export type EmulatedFault = 'autocutter' | 'unrecoverable' | 'overheat';

type PrinterEvents = {
  /** A receipt was cut. */
  job: [job: PrintedJob];
  /** The printer went offline or came back. */
  online: [online: boolean];
};

export class EmulatedPrinter extends EventEmitter<PrinterEvents> {
  readonly headWidth: number;
  readonly jobs: PrintedJob[] = [];
  /** Commands this printer does not know, as received. */
  readonly unknownCommands: Uint8Array[] = [];
  /** Things a real printer would print wrongly: bands wider than the head, lost rows. */
  readonly warnings: string[] = [];
  /** Commands counted by type, and status queries answered. */
  readonly counts = { init: 0, raster: 0, cut: 0, realtimeStatus: 0, transmitStatus: 0 };
  paperRows: number;
  answersRealtimeStatus: boolean;
  answersTransmitStatus: boolean;

  private coverOpenState = false;
  private paperOutState = false;
  private nearEndState = false;
  private faultState: EmulatedFault | undefined;
  private rows: Uint8Array[] = [];
  private uncut = { bands: 0, feedLines: 0, feedDots: 0, text: '' };
  private readonly sessions = new Set<Session>();

  constructor(options: EmulatedPrinterOptions = {}) {
    super();
    this.headWidth = checkHeadWidth(options.headWidth ?? 384);
    this.paperRows = options.paperRows ?? Infinity;
    this.answersRealtimeStatus = options.answersRealtimeStatus ?? true;
    this.answersTransmitStatus = options.answersTransmitStatus ?? true;
  }

  /** Serves the printer on this stream until it closes; returns a function that detaches. */
  attach(stream: Duplex): () => void {
    const session = new Session(this, stream);
    this.sessions.add(session);
    const detach = () => {
      session.stop();
      this.sessions.delete(session);
    };
    stream.once('close', detach);
    return detach;
  }

  get online(): boolean {
    return !this.coverOpenState && !this.paperOutState && this.faultState === undefined;
  }
  get coverOpen(): boolean {
    return this.coverOpenState;
  }
  get paperOut(): boolean {
    return this.paperOutState;
  }

  setCoverOpen(open: boolean): void {
    this.change(() => (this.coverOpenState = open));
  }

  /** Paper out (true) or back (false, with unlimited paper unless paperRows is set after). */
  setPaperOut(out: boolean): void {
    this.change(() => {
      this.paperOutState = out;
      this.paperRows = out ? 0 : Infinity;
    });
  }

  /** Loads a roll with this many dot rows (default unlimited). */
  loadPaper(rows = Infinity): void {
    this.change(() => {
      this.paperRows = rows;
      this.paperOutState = rows <= 0;
    });
  }

  setNearEnd(nearEnd: boolean): void {
    this.nearEndState = nearEnd;
  }

  setFault(fault: EmulatedFault | undefined): void {
    this.change(() => (this.faultState = fault));
  }

  /** Resolves with the next receipt cut. */
  nextJob(): Promise<PrintedJob> {
    return new Promise((resolve) => this.once('job', resolve));
  }

  /** Rows printed since the last cut. */
  get uncutRows(): number {
    return this.rows.length;
  }

  /** The answer to DLE EOT n (n = 1..4); see docs/printer.md for the bits. */
  realtimeStatus(n: number): number | undefined {
    const fixed = 0x12;
    const paperStop = this.paperOutState;
    switch (n) {
      case 1:
        return fixed | (this.online ? 0 : 0x08);
      case 2:
        return (
          fixed |
          (this.coverOpenState ? 0x04 : 0) |
          (paperStop ? 0x20 : 0) |
          (this.faultState ? 0x40 : 0)
        );
      case 3:
        return (
          fixed |
          (this.faultState === 'autocutter' ? 0x08 : 0) |
          (this.faultState === 'unrecoverable' ? 0x20 : 0) |
          (this.faultState === 'overheat' ? 0x40 : 0)
        );
      case 4:
        return fixed | (this.nearEndState ? 0x0c : 0) | (this.paperOutState ? 0x60 : 0);
      default:
        return undefined;
    }
  }

  /** The answer to GS r 1 (paper sensor). */
  paperSensorStatus(): number {
    return (this.nearEndState ? 0x03 : 0) | (this.paperOutState ? 0x0c : 0);
  }

  /** Carries out one command a session parsed; `answer` writes a byte back on that session. */
  execute(command: EscPosCommand, answer: (byte: number) => void): void {
    switch (command.type) {
      case 'init':
        this.counts.init++;
        return;
      case 'raster':
        this.counts.raster++;
        this.printBand(command);
        return;
      case 'feed-lines':
        this.uncut.feedLines += command.lines;
        return;
      case 'feed-dots':
        this.uncut.feedDots += command.dots;
        return;
      case 'line-feed':
        this.uncut.text += '\n';
        return;
      case 'text':
        this.uncut.text += Buffer.from(command.bytes).toString('latin1');
        return;
      case 'cut':
        this.counts.cut++;
        this.cut(command.partial ? 'partial' : 'full');
        return;
      case 'realtime-status':
        this.answerRealtime(command.n, answer);
        return;
      case 'transmit-status':
        if (!this.answersTransmitStatus) return;
        this.counts.transmitStatus++;
        if (command.n === 1 || command.n === 49) answer(this.paperSensorStatus());
        else if (command.n === 2 || command.n === 50) answer(0x00);
        return;
      case 'unknown':
        this.unknownCommands.push(command.bytes);
        return;
    }
  }

  answerRealtime(n: number, answer: (byte: number) => void): void {
    const byte = this.realtimeStatus(n);
    if (byte === undefined || !this.answersRealtimeStatus) return;
    this.counts.realtimeStatus++;
    answer(byte);
  }

  private printBand(command: Extract<EscPosCommand, { type: 'raster' }>): void {
    const headBytes = this.headWidth / 8;
    if (command.mode !== 0)
      this.warnings.push(`GS v 0 density mode ${command.mode} printed at normal size`);
    if (command.bytesPerRow > headBytes)
      this.warnings.push(
        `GS v 0 band of ${command.bytesPerRow * 8} dots on a ${this.headWidth}-dot head: clipped`,
      );
    this.uncut.bands++;
    for (let r = 0; r < command.rows; r++) {
      if (this.paperRows <= 0) {
        this.warnings.push(`paper ran out: ${command.rows - r} rows of a band lost`);
        this.change(() => (this.paperOutState = true));
        return;
      }
      const row = new Uint8Array(headBytes);
      const from = r * command.bytesPerRow;
      row.set(command.data.subarray(from, from + Math.min(command.bytesPerRow, headBytes)), 0);
      this.rows.push(row);
      this.paperRows--;
    }
  }

  private cut(kind: 'full' | 'partial'): void {
    if (this.rows.length === 0 && this.uncut.text === '') return;
    const raster = blankRaster(this.headWidth, this.rows.length);
    this.rows.forEach((row, y) => raster.data.set(row, y * raster.bytesPerRow));
    const job: PrintedJob = { raster, cut: kind, ...this.uncut };
    this.rows = [];
    this.uncut = { bands: 0, feedLines: 0, feedDots: 0, text: '' };
    this.jobs.push(job);
    this.emit('job', job);
  }

  private change(apply: () => void): void {
    const was = this.online;
    apply();
    if (this.online === was) return;
    this.emit('online', this.online);
    if (this.online) for (const session of this.sessions) session.resume();
  }
}

/** One stream's parser state: bytes held until they form a command, or while offline. */
class Session {
  private held: Buffer = Buffer.alloc(0);
  private incoming: Buffer[] = [];
  private incomingBytes = 0;
  /** Bytes (from the start of held) needed before the next parse can succeed. */
  private need = 1;
  /** Held bytes already scanned for DLE EOT while offline. */
  private scanned = 0;

  private readonly onData = (chunk: Buffer) => {
    this.incoming.push(chunk);
    this.incomingBytes += chunk.length;
    if (!this.printer.online) this.scanOffline();
    else if (this.held.length + this.incomingBytes >= this.need) this.resume();
  };

  constructor(
    private readonly printer: EmulatedPrinter,
    private readonly stream: Duplex,
  ) {
    stream.on('data', this.onData);
  }

  stop(): void {
    this.stream.off('data', this.onData);
  }

  /** Takes commands while the printer is online. */
  resume(): void {
    this.gather();
    let at = 0;
    while (this.printer.online) {
      const step = parseCommand(this.held, at);
      if (!step.command) {
        this.need = step.need;
        break;
      }
      at += step.length;
      this.printer.execute(step.command, this.answer);
    }
    this.held = this.held.subarray(at);
    this.scanned = 0;
    if (!this.printer.online) this.scanOffline();
  }

  private readonly answer = (byte: number) => {
    if (!this.stream.destroyed) this.stream.write(Buffer.from([byte]));
  };

  private gather(): void {
    if (this.incoming.length === 0) return;
    this.held = Buffer.concat([this.held, ...this.incoming]);
    this.incoming = [];
    this.incomingBytes = 0;
  }

  /** Offline: answer (and drop) each complete DLE EOT n, n = 1..4, among the held bytes. */
  private scanOffline(): void {
    this.gather();
    const kept: number[] = [];
    const held = this.held;
    let changed = false;
    let i = Math.max(0, this.scanned - 2);
    const head = held.subarray(0, i);
    for (; i < held.length; i++) {
      const n = held[i + 2];
      if (held[i] === DLE && held[i + 1] === EOT && n !== undefined && n >= 1 && n <= 4) {
        this.printer.answerRealtime(n, this.answer);
        changed = true;
        i += 2;
      } else {
        kept.push(held[i]!);
      }
    }
    if (changed) this.held = Buffer.concat([head, Buffer.from(kept)]);
    this.scanned = this.held.length;
  }
}
