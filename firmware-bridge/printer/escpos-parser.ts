/**
 * Splits an ESC/POS byte stream into commands, the printer's side of escpos.ts. Knows the
 * commands this driver sends, the real-time and status queries, text and line feeds;
 * anything else comes out as `unknown` (2 bytes for an ESC/GS/FS/DLE prefix, else 1), since
 * the length of an unknown command cannot be known. Pure.
 */
import { DLE, ESC, GS } from './escpos.js';

export type EscPosCommand =
  | { type: 'init' }
  /** GS v 0: m is the density mode (0 normal; 1, 2, 3 double width/height/both). */
  | { type: 'raster'; mode: number; bytesPerRow: number; rows: number; data: Uint8Array }
  /** ESC d n. */
  | { type: 'feed-lines'; lines: number }
  /** ESC J n. */
  | { type: 'feed-dots'; dots: number }
  /** GS V m (function A), or GS V m n (function B: feed to the cutter + n, then cut). */
  | { type: 'cut'; partial: boolean; feed?: number }
  /** DLE EOT n (n = 7, 8, 18 carry one more byte, a). */
  | { type: 'realtime-status'; n: number; a?: number }
  /** GS r n. */
  | { type: 'transmit-status'; n: number }
  /** LF. */
  | { type: 'line-feed' }
  /** Printable bytes (0x20-0xFF), printed as text by a real printer. */
  | { type: 'text'; bytes: Uint8Array }
  | { type: 'unknown'; bytes: Uint8Array };

/**
 * The command at `at`: what it is and its length, or how many bytes from `at` it needs
 * (at least) when the buffer ends inside it.
 */
export type ParseStep =
  { command: EscPosCommand; length: number } | { command?: undefined; need: number };

const more = (need: number): ParseStep => ({ need });

export function parseCommand(buf: Uint8Array, at: number): ParseStep {
  const left = buf.length - at;
  if (left < 1) return more(1);
  const b0 = buf[at]!;
  if (b0 === 0x0a) return { command: { type: 'line-feed' }, length: 1 };
  if (b0 >= 0x20) {
    let end = at;
    while (end < buf.length && buf[end]! >= 0x20) end++;
    return { command: { type: 'text', bytes: copy(buf, at, end) }, length: end - at };
  }
  const prefixed = b0 === ESC || b0 === GS || b0 === DLE || b0 === 0x1c;
  if (!prefixed) return unknown(buf, at, 1);
  if (left < 2) return more(2);
  const b1 = buf[at + 1]!;
  const param = (): ParseStep | number => (left < 3 ? more(3) : buf[at + 2]!);

  if (b0 === ESC && b1 === 0x40) return { command: { type: 'init' }, length: 2 };
  if (b0 === ESC && (b1 === 0x64 || b1 === 0x4a)) {
    const n = param();
    if (typeof n !== 'number') return n;
    const command: EscPosCommand =
      b1 === 0x64 ? { type: 'feed-lines', lines: n } : { type: 'feed-dots', dots: n };
    return { command, length: 3 };
  }
  if (b0 === DLE && b1 === 0x04) {
    const n = param();
    if (typeof n !== 'number') return n;
    if (n === 7 || n === 8 || n === 18) {
      if (left < 4) return more(4);
      return { command: { type: 'realtime-status', n, a: buf[at + 3]! }, length: 4 };
    }
    return { command: { type: 'realtime-status', n }, length: 3 };
  }
  if (b0 === GS && b1 === 0x72) {
    const n = param();
    if (typeof n !== 'number') return n;
    return { command: { type: 'transmit-status', n }, length: 3 };
  }
  if (b0 === GS && b1 === 0x56) {
    const m = param();
    if (typeof m !== 'number') return m;
    if (m === 0 || m === 48 || m === 1 || m === 49)
      return { command: { type: 'cut', partial: m === 1 || m === 49 }, length: 3 };
    if (m === 65 || m === 66) {
      if (left < 4) return more(4);
      return { command: { type: 'cut', partial: m === 66, feed: buf[at + 3]! }, length: 4 };
    }
    return unknown(buf, at, 3);
  }
  if (b0 === GS && b1 === 0x76) {
    if (left < 8) return more(8);
    if (buf[at + 2] !== 0x30) return unknown(buf, at, 3);
    const mode = buf[at + 3]!;
    const bytesPerRow = buf[at + 4]! | (buf[at + 5]! << 8);
    const rows = buf[at + 6]! | (buf[at + 7]! << 8);
    const length = 8 + bytesPerRow * rows;
    if (left < length) return more(length);
    const data = copy(buf, at + 8, at + length);
    return { command: { type: 'raster', mode: mode & 0x03, bytesPerRow, rows, data }, length };
  }
  return unknown(buf, at, 2);
}

function unknown(buf: Uint8Array, at: number, length: number): ParseStep {
  return { command: { type: 'unknown', bytes: copy(buf, at, at + length) }, length };
}

/** Every complete command in the bytes, and the offset where an incomplete one starts. */
export function parseAll(buf: Uint8Array): { commands: EscPosCommand[]; rest: number } {
  const commands: EscPosCommand[] = [];
  let at = 0;
  for (;;) {
    const step = parseCommand(buf, at);
    if (!step.command) return { commands, rest: at };
    commands.push(step.command);
    at += step.length;
  }
}

/** A plain Uint8Array copy (Buffer.slice would be a view into the caller's buffer). */
function copy(buf: Uint8Array, start: number, end: number): Uint8Array {
  return new Uint8Array(buf.subarray(start, end));
}
