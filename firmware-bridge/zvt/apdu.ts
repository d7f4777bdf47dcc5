/**
 * The ZVT APDU: control field (class, instruction), length, data (zvt-notes §3).
 *
 * ```
 *  short form   | cc | ii | LL (00-FE) | LL data bytes |
 *  long form    | cc | ii | FF | lo | hi | (hi << 8 | lo) data bytes |   (little-endian)
 * ```
 *
 * Lengths 0-254 use the short form and 255 or more the long form. A decoded long form for
 * a length under 255 (PZ's `04 0F FF 01 00 6C`) is kept as `longLength: true`, so that
 * encode(decode(bytes)) gives back the same bytes for every APDU the peer may send.
 *
 * Both transports carry the same bytes: inside DLE STX … DLE ETX frames on serial
 * (serial-frame-*.ts), back to back on TCP (tcp-splitter.ts, which uses `apduLength`).
 */
import { decoded, failure, type Decoded } from './errors.js';

export interface Apdu {
  /** Class byte: 04 PT information, 05 status enquiry, 06 commands, 80/84 acknowledgements. */
  cls: number;
  /** Instruction byte (the result code in an 84 acknowledgement). */
  ins: number;
  data: Buffer;
  /** The long length form was used for fewer than 255 bytes (only set when decoded so). */
  longLength?: true;
}

/** The largest data a length field can announce. */
export const MAX_APDU_DATA = 0xffff;
/** Control field plus the long length form. */
export const MAX_APDU_HEADER = 5;

export function encodeApdu(apdu: Apdu): Buffer {
  const { cls, ins, data } = apdu;
  if (!isByte(cls) || !isByte(ins)) {
    throw new RangeError(`APDU control field ${cls}/${ins} is not two bytes`);
  }
  if (data.length > MAX_APDU_DATA) {
    throw new RangeError(`APDU data of ${data.length} bytes exceeds ${MAX_APDU_DATA}`);
  }
  const header =
    data.length >= 0xff || apdu.longLength
      ? Buffer.from([cls, ins, 0xff, data.length & 0xff, data.length >> 8])
      : Buffer.from([cls, ins, data.length]);
  return Buffer.concat([header, data]);
}

/**
 * The total length of the APDU starting at `bytes[0]`, as its header announces; undefined
 * while the header is incomplete. Never looks past the header.
 */
export function apduLength(bytes: Uint8Array): number | undefined {
  if (bytes.length < 3) return undefined;
  const short = bytes[2] as number;
  if (short !== 0xff) return 3 + short;
  if (bytes.length < 5) return undefined;
  return 5 + ((bytes[3] as number) | ((bytes[4] as number) << 8));
}

/** Exactly one APDU; never throws. The data is a copy, independent of `bytes`. */
export function decodeApdu(bytes: Uint8Array): Decoded<Apdu> {
  if (bytes.length < 3) {
    return failure('truncated', `an APDU has at least 3 bytes, got ${bytes.length}`, 0);
  }
  const total = apduLength(bytes);
  if (total === undefined) {
    return failure('truncated', 'the long length form needs 2 more bytes after FF', 3);
  }
  const headerLength = bytes[2] === 0xff ? 5 : 3;
  if (bytes.length < total) {
    return failure(
      'truncated',
      `the length field announces ${total - headerLength} data bytes, only ${bytes.length - headerLength} follow`,
      bytes.length,
    );
  }
  if (bytes.length > total) {
    return failure(
      'trailing-bytes',
      `${bytes.length - total} bytes after the ${total - headerLength} data bytes the length announces`,
      total,
    );
  }
  const data = Buffer.from(bytes.subarray(headerLength, total));
  const apdu: Apdu = { cls: bytes[0] as number, ins: bytes[1] as number, data };
  if (headerLength === 5 && data.length < 0xff) apdu.longLength = true;
  return decoded(apdu);
}

/** `06 01`-style name of the control field, for messages and logs. */
export function controlName(apdu: Pick<Apdu, 'cls' | 'ins'>): string {
  return `${hex(apdu.cls)} ${hex(apdu.ins)}`;
}

export const hex = (byte: number): string => byte.toString(16).toUpperCase().padStart(2, '0');

/** Bytes as space-separated hex, as the notes write them: `06 0F 00`. */
export function hexBytes(bytes: Uint8Array): string {
  return Array.from(bytes, hex).join(' ');
}

/** Space-separated (or packed) hex to bytes; RangeError on anything else. For tests and tools. */
export function fromHex(text: string): Buffer {
  const packed = text.replace(/\s+/g, '');
  if (!/^(?:[0-9A-Fa-f]{2})*$/.test(packed)) throw new RangeError(`not hex bytes: ${text}`);
  return Buffer.from(packed, 'hex');
}

function isByte(value: number): boolean {
  return Number.isInteger(value) && value >= 0 && value <= 0xff;
}
