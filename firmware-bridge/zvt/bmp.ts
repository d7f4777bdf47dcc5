/**
 * BMP fields (zvt-notes §3.2): a 1-byte tag, then a value whose length the tag fixes — a
 * fixed count, an LL/LLL prefix, or (BMP 06) a BER length. A tag outside the table cannot
 * be skipped (its length is unknown), so decoding stops there with `unknown-bmp`, as ET and
 * PZ do.
 *
 * Each decoded field keeps its value in the form of its format, exactly: BCD as nibbles,
 * ASCII as latin1 text, display and print text as CP437, binary as bytes, BMP 06 as a TLV
 * container. So `encodeBmps(decodeBmps(bytes))` is `bytes`, byte for byte. bmp-values.ts
 * reads them as named, typed values (amount in minor units, receipt number, …).
 */
import {
  bcdFromNibbles,
  decodeCp437,
  encodeCp437,
  nibblesOf,
  readVarLength,
  varLengthPrefix,
} from './encodings.js';
import { decoded, failure, shifted, type Decoded } from './errors.js';
import { decodeContainer, encodeContainer, type TlvContainer } from './tlv.js';

export type BmpFormat = 'byte' | 'bcd' | 'ascii' | 'text' | 'binary' | 'tlv';
/** A fixed byte count, an LL (0-99) or LLL (0-999) prefix, or the BER length of BMP 06. */
export type BmpLength = number | 'LL' | 'LLL' | 'BER';

export interface BmpSpec {
  tag: number;
  name: string;
  format: BmpFormat;
  length: BmpLength;
}

export type Bmp =
  | { tag: number; format: 'byte'; value: number }
  | { tag: number; format: 'bcd'; value: string }
  | { tag: number; format: 'ascii'; value: string }
  | { tag: number; format: 'text'; value: string }
  | { tag: number; format: 'binary'; value: Buffer }
  | { tag: number; format: 'tlv'; value: TlvContainer };

const spec = (tag: number, name: string, format: BmpFormat, length: BmpLength): BmpSpec => ({
  tag,
  name,
  format,
  length,
});

/** The BMPs of the notes' table (ET bitmaps.py, PZ BmpParser, WS bitmap_info, EV packets.rs). */
export const BMP_SPECS: ReadonlyMap<number, BmpSpec> = new Map(
  [
    spec(0x01, 'timeout', 'byte', 1),
    spec(0x02, 'max-status-infos', 'byte', 1),
    spec(0x03, 'service-byte', 'byte', 1),
    spec(0x04, 'amount', 'bcd', 6),
    spec(0x05, 'pump-number', 'byte', 1),
    spec(0x06, 'tlv', 'tlv', 'BER'),
    spec(0x0b, 'trace-number', 'bcd', 3),
    spec(0x0c, 'time', 'bcd', 3),
    spec(0x0d, 'date', 'bcd', 2),
    spec(0x0e, 'expiry-date', 'bcd', 2),
    spec(0x17, 'card-sequence-number', 'bcd', 2),
    spec(0x19, 'payment-type', 'byte', 1),
    spec(0x22, 'pan', 'bcd', 'LL'),
    spec(0x23, 'track-2', 'bcd', 'LL'),
    spec(0x24, 'track-3', 'bcd', 'LLL'),
    spec(0x27, 'result-code', 'byte', 1),
    spec(0x29, 'terminal-id', 'bcd', 4),
    spec(0x2a, 'vu-number', 'ascii', 15),
    spec(0x2d, 'track-1', 'binary', 'LL'),
    spec(0x2e, 'sync-chip-data', 'binary', 'LLL'),
    spec(0x37, 'original-trace-number', 'bcd', 3),
    spec(0x3a, 'cvv', 'bcd', 2),
    spec(0x3b, 'aid', 'ascii', 8),
    spec(0x3c, 'additional-text', 'text', 'LLL'),
    spec(0x3d, 'password', 'bcd', 3),
    spec(0x49, 'currency', 'bcd', 2),
    spec(0x4c, 'blocked-goods-groups', 'bcd', 'LL'),
    spec(0x60, 'individual-totals', 'binary', 'LLL'),
    spec(0x70, 'image-request-id', 'binary', 4),
    spec(0x71, 'image-total-size', 'binary', 4),
    spec(0x72, 'image-mime-type', 'byte', 1),
    spec(0x73, 'image-encoding', 'byte', 1),
    spec(0x74, 'image-chunk-count', 'byte', 1),
    spec(0x75, 'image-chunk-index', 'byte', 1),
    spec(0x87, 'receipt-number', 'bcd', 2),
    spec(0x88, 'turnover-number', 'bcd', 3),
    spec(0x8a, 'card-type', 'byte', 1),
    spec(0x8b, 'card-name', 'text', 'LL'),
    spec(0x8c, 'operator-card-type', 'byte', 1),
    spec(0x92, 'ec-cash-chip-data', 'binary', 'LLL'),
    spec(0x9a, 'geldkarte-records', 'binary', 'LLL'),
    spec(0xa0, 'result-code-as', 'byte', 1),
    spec(0xa7, 'chip-data-ef-id', 'binary', 'LL'),
    spec(0xaa, 'date-yymmdd', 'bcd', 3),
    spec(0xaf, 'chip-data-ef-info', 'binary', 'LLL'),
    spec(0xba, 'aid-parameter', 'binary', 5),
    spec(0xd0, 'algorithm-key', 'byte', 1),
    spec(0xd1, 'card-offset', 'binary', 'LL'),
    spec(0xd2, 'card-output-direction', 'byte', 1),
    spec(0xd3, 'key-position', 'byte', 1),
    spec(0xe0, 'min-input-length', 'byte', 1),
    ...[1, 2, 3, 4, 5, 6, 7, 8].map((n) => spec(0xe0 + n, `text-2-line-${n}`, 'text', 'LL')),
    spec(0xe9, 'max-input-length', 'byte', 1),
    spec(0xea, 'echo-input', 'byte', 1),
    spec(0xeb, 'mac', 'binary', 8),
    spec(0xf0, 'display-duration', 'byte', 1),
    ...[1, 2, 3, 4, 5, 6, 7, 8].map((n) => spec(0xf0 + n, `text-1-line-${n}`, 'text', 'LL')),
    spec(0xf9, 'beeps', 'byte', 1),
    spec(0xfa, 'card-reader-activation', 'byte', 1),
    spec(0xfb, 'ok-required', 'byte', 1),
    spec(0xfc, 'dialog-control', 'byte', 1),
    spec(0xfd, 'display-device', 'byte', 1),
  ].map((entry) => [entry.tag, entry]),
);

/** BMPs from `at` to the end of `bytes`; offsets in errors count from `bytes[0]`. */
export function decodeBmps(bytes: Uint8Array, at = 0): Decoded<Bmp[]> {
  const fields: Bmp[] = [];
  while (at < bytes.length) {
    const field = decodeBmp(bytes, at);
    if (!field.ok) return field;
    fields.push(field.value.bmp);
    at += field.value.size;
  }
  return decoded(fields);
}

/** One BMP at `at`: the field and the bytes it took (tag included). */
export function decodeBmp(bytes: Uint8Array, at: number): Decoded<{ bmp: Bmp; size: number }> {
  const tag = bytes[at] as number;
  const entry = BMP_SPECS.get(tag);
  if (!entry) {
    return failure('unknown-bmp', `BMP ${hex(tag)} is not in the table: its length is unknown`, at);
  }
  if (entry.format === 'tlv') {
    const container = decodeContainer(bytes, at + 1);
    if (!container.ok) return container;
    const bmp: Bmp = { tag, format: 'tlv', value: container.value.container };
    return decoded({ bmp, size: 1 + container.value.size });
  }
  let start = at + 1;
  let length: number;
  if (typeof entry.length === 'number') {
    length = entry.length;
  } else {
    const digits = entry.length === 'LL' ? 2 : 3;
    const prefix = bytes.subarray(start, start + digits);
    if (prefix.length < digits) return failure('truncated', `BMP ${hex(tag)} length is cut`, start);
    const read = readVarLength(prefix);
    if (read === undefined) {
      return failure(
        'bad-var-length',
        `BMP ${hex(tag)} ${entry.length} length bytes are not F0-F9`,
        start,
      );
    }
    length = read;
    start += digits;
  }
  if (start + length > bytes.length) {
    return failure(
      'truncated',
      `BMP ${hex(tag)} (${entry.name}) needs ${length} bytes, ${bytes.length - start} remain`,
      at,
    );
  }
  const value = bytes.subarray(start, start + length);
  return decoded({ bmp: valueOf(tag, entry.format, value), size: start + length - at });
}

function valueOf(tag: number, format: Exclude<BmpFormat, 'tlv'>, value: Uint8Array): Bmp {
  switch (format) {
    case 'byte':
      return { tag, format, value: value[0] as number };
    case 'bcd':
      return { tag, format, value: nibblesOf(value) };
    case 'ascii':
      return { tag, format, value: Buffer.from(value).toString('latin1') };
    case 'text':
      return { tag, format, value: decodeCp437(value) };
    case 'binary':
      return { tag, format, value: Buffer.from(value) };
  }
}

export function encodeBmps(fields: readonly Bmp[]): Buffer {
  return Buffer.concat(fields.map(encodeBmp));
}

/** One field; RangeError when the tag is unknown or the value does not fit its format. */
export function encodeBmp(field: Bmp): Buffer {
  const entry = BMP_SPECS.get(field.tag);
  if (!entry) throw new RangeError(`BMP ${hex(field.tag)} is not in the table`);
  if (entry.format !== field.format) {
    throw new RangeError(`BMP ${hex(field.tag)} is ${entry.format}, not ${field.format}`);
  }
  if (field.format === 'tlv') {
    return Buffer.concat([Buffer.from([field.tag]), encodeContainer(field.value)]);
  }
  const value = rawValue(field);
  if (typeof entry.length === 'number') {
    if (value.length !== entry.length) {
      throw new RangeError(
        `BMP ${hex(field.tag)} (${entry.name}) takes ${entry.length} bytes, got ${value.length}`,
      );
    }
    return Buffer.concat([Buffer.from([field.tag]), value]);
  }
  const prefix = varLengthPrefix(value.length, entry.length === 'LL' ? 2 : 3);
  return Buffer.concat([Buffer.from([field.tag]), prefix, value]);
}

function rawValue(field: Exclude<Bmp, { format: 'tlv' }>): Buffer {
  switch (field.format) {
    case 'byte':
      if (!Number.isInteger(field.value) || field.value < 0 || field.value > 0xff) {
        throw new RangeError(`BMP ${hex(field.tag)} value ${field.value} is not a byte`);
      }
      return Buffer.from([field.value]);
    case 'bcd':
      return bcdFromNibbles(field.value);
    case 'ascii':
      if ([...field.value].some((char) => char.charCodeAt(0) > 0xff)) {
        throw new RangeError(`BMP ${hex(field.tag)} text is not latin1`);
      }
      return Buffer.from(field.value, 'latin1');
    case 'text':
      return encodeCp437(field.value);
    case 'binary':
      return field.value;
  }
}

/** The first field with `tag`. */
export function findBmp(fields: readonly Bmp[], tag: number): Bmp | undefined {
  return fields.find((field) => field.tag === tag);
}

/** Decodes BMPs from `at` with error offsets relative to `base` (an APDU's data start). */
export function decodeBmpsAt(bytes: Uint8Array, at: number, base: number): Decoded<Bmp[]> {
  const result = decodeBmps(bytes, at);
  return result.ok ? result : shifted(result, base);
}

const hex = (byte: number) => byte.toString(16).toUpperCase().padStart(2, '0');
