/**
 * BMP fields read as named, typed values, and built from them. bmp.ts keeps the exact
 * bytes (for the round trip); this file gives the meaning a driver or the emulator works
 * with: the amount in minor units, the receipt number as a number, the PAN as printable
 * digits. A field whose bytes do not make a valid value (an amount with a nibble A-F) is
 * left out of the record rather than guessed; it stays available in the field list.
 */
import { findBmp, type Bmp } from './bmp.js';
import { decimalFromBcd, decimalNibbles } from './encodings.js';
import type { TlvContainer } from './tlv.js';

export interface BmpValues {
  /** 01: timeout in seconds. */
  timeout?: number;
  /** 02: max. number of status-informations (issue of goods). */
  maxStatusInfos?: number;
  /** 03 */
  serviceByte?: number;
  /** 04: minor units, 0 to 999 999 999 999. */
  amount?: number;
  /** 06 */
  tlv?: TlvContainer;
  /** 0B */
  traceNumber?: number;
  /** 0C: `HHMMSS`. */
  time?: string;
  /** 0D: `MMDD`. */
  date?: string;
  /** 0E: `YYMM`. */
  expiryDate?: string;
  /** 17 */
  cardSequenceNumber?: string;
  /** 19: payment type in requests and 04 0F, status byte in the 06 0F after 06 00. */
  paymentType?: number;
  /** 22: digits, `*` for a masked digit (E), padding F removed. */
  pan?: string;
  /** 27 */
  resultCode?: number;
  /** 29: 8 digits. */
  terminalId?: string;
  /** 2A */
  vuNumber?: string;
  /** 37 */
  originalTraceNumber?: number;
  /** 3C */
  additionalText?: string;
  /** 3D: 6 digits. */
  password?: string;
  /** 49: ISO 4217 numeric (978 = EUR). */
  currency?: number;
  /** 87 */
  receiptNumber?: number;
  /** 88 */
  turnoverNumber?: number;
  /** 8A */
  cardType?: number;
  /** 8B: without the trailing NUL some PTs send. */
  cardName?: string;
  /** 8C */
  operatorCardType?: number;
  /** A0 */
  resultCodeAs?: number;
}

type NumberKey = 'amount' | 'traceNumber' | 'originalTraceNumber' | 'currency' | 'receiptNumber';
type ByteKey =
  | 'timeout'
  | 'maxStatusInfos'
  | 'serviceByte'
  | 'paymentType'
  | 'resultCode'
  | 'cardType'
  | 'operatorCardType'
  | 'resultCodeAs';

/** Decimal BCD fields read as numbers, with their byte size. */
const DECIMALS: readonly [NumberKey | 'turnoverNumber', number, number][] = [
  ['amount', 0x04, 6],
  ['traceNumber', 0x0b, 3],
  ['originalTraceNumber', 0x37, 3],
  ['currency', 0x49, 2],
  ['receiptNumber', 0x87, 2],
  ['turnoverNumber', 0x88, 3],
];

const BYTES: readonly [ByteKey, number][] = [
  ['timeout', 0x01],
  ['maxStatusInfos', 0x02],
  ['serviceByte', 0x03],
  ['paymentType', 0x19],
  ['resultCode', 0x27],
  ['cardType', 0x8a],
  ['operatorCardType', 0x8c],
  ['resultCodeAs', 0xa0],
];

/** Decimal BCD fields kept as digit strings, with their byte size. */
const DIGITS: readonly [
  'time' | 'date' | 'expiryDate' | 'cardSequenceNumber' | 'terminalId' | 'password',
  number,
  number,
][] = [
  ['time', 0x0c, 3],
  ['date', 0x0d, 2],
  ['expiryDate', 0x0e, 2],
  ['cardSequenceNumber', 0x17, 2],
  ['terminalId', 0x29, 4],
  ['password', 0x3d, 3],
];

/** The named values of the fields; the first of a repeated tag wins. */
export function readBmps(fields: readonly Bmp[]): BmpValues {
  const values: BmpValues = {};
  for (const [key, tag] of BYTES) {
    const field = findBmp(fields, tag);
    if (field?.format === 'byte') values[key] = field.value;
  }
  for (const [key, tag] of DECIMALS) {
    const field = findBmp(fields, tag);
    const number = field?.format === 'bcd' ? decimalFromBcd(field.value) : undefined;
    if (number !== undefined) values[key] = number;
  }
  for (const [key, tag] of DIGITS) {
    const field = findBmp(fields, tag);
    if (field?.format === 'bcd' && /^[0-9]+$/.test(field.value)) values[key] = field.value;
  }
  const tlv = findBmp(fields, 0x06);
  if (tlv?.format === 'tlv') values.tlv = tlv.value;
  const pan = findBmp(fields, 0x22);
  if (pan?.format === 'bcd') values.pan = pan.value.replace(/F+$/, '').replaceAll('E', '*');
  const text = (tag: number) => {
    const field = findBmp(fields, tag);
    return field?.format === 'text' || field?.format === 'ascii' ? field.value : undefined;
  };
  const vu = text(0x2a);
  if (vu !== undefined) values.vuNumber = vu.trimEnd();
  const additional = text(0x3c);
  if (additional !== undefined) values.additionalText = additional;
  const name = text(0x8b);
  if (name !== undefined) values.cardName = name.replace(/\0+$/, '');
  return values;
}

/**
 * Fields for the values, in the order of the table in zvt-notes §5.3 (result first). The
 * card name gets the trailing NUL the captures show; the VU number is space padded to 15.
 */
export function bmpsFrom(values: BmpValues): Bmp[] {
  const fields: Bmp[] = [];
  const byte = (tag: number, value: number | undefined) => {
    if (value !== undefined) fields.push({ tag, format: 'byte', value });
  };
  const decimal = (tag: number, value: number | undefined, bytes: number) => {
    if (value !== undefined)
      fields.push({ tag, format: 'bcd', value: decimalNibbles(value, bytes) });
  };
  const digits = (tag: number, value: string | undefined, bytes: number) => {
    if (value === undefined) return;
    if (!/^[0-9]*$/.test(value) || value.length > bytes * 2) {
      throw new RangeError(`${JSON.stringify(value)} is not ${bytes * 2} decimal digits`);
    }
    fields.push({ tag, format: 'bcd', value: value.padStart(bytes * 2, '0') });
  };
  byte(0x27, values.resultCode);
  decimal(0x04, values.amount, 6);
  decimal(0x49, values.currency, 2);
  byte(0x19, values.paymentType);
  digits(0x0c, values.time, 3);
  digits(0x0d, values.date, 2);
  digits(0x0e, values.expiryDate, 2);
  digits(0x17, values.cardSequenceNumber, 2);
  if (values.pan !== undefined)
    fields.push({ tag: 0x22, format: 'bcd', value: panNibbles(values.pan) });
  decimal(0x0b, values.traceNumber, 3);
  decimal(0x37, values.originalTraceNumber, 3);
  decimal(0x87, values.receiptNumber, 2);
  decimal(0x88, values.turnoverNumber, 3);
  digits(0x29, values.terminalId, 4);
  if (values.vuNumber !== undefined) {
    fields.push({ tag: 0x2a, format: 'ascii', value: values.vuNumber.padEnd(15).slice(0, 15) });
  }
  byte(0x8a, values.cardType);
  byte(0x8c, values.operatorCardType);
  if (values.cardName !== undefined) {
    fields.push({ tag: 0x8b, format: 'text', value: `${values.cardName}\0` });
  }
  byte(0xa0, values.resultCodeAs);
  if (values.additionalText !== undefined) {
    fields.push({ tag: 0x3c, format: 'text', value: values.additionalText });
  }
  byte(0x01, values.timeout);
  byte(0x02, values.maxStatusInfos);
  byte(0x03, values.serviceByte);
  digits(0x3d, values.password, 3);
  if (values.tlv !== undefined) fields.push({ tag: 0x06, format: 'tlv', value: values.tlv });
  return fields;
}

/** A PAN of digits and `*` (masked) as BCD nibbles: E for `*`, F padding to whole bytes. */
export function panNibbles(pan: string): string {
  if (!/^[0-9*]*$/.test(pan)) throw new RangeError(`a PAN has digits and * only: ${pan}`);
  const nibbles = pan.replaceAll('*', 'E');
  return nibbles.length % 2 === 0 ? nibbles : `${nibbles}F`;
}

// ---- BMP 60: individual totals of an end-of-day ----

/** The card groups of BMP 60 in their order on the wire (zvt-notes §5.6). */
export const TOTALS_GROUPS = [
  'girocard',
  'jcb',
  'eurocard',
  'amex',
  'visa',
  'diners',
  'others',
] as const;
export type TotalsGroup = (typeof TOTALS_GROUPS)[number];

export interface IndividualTotals {
  firstReceipt: number;
  lastReceipt: number;
  groups: Record<TotalsGroup, { count: number; total: number }>;
}

const TOTALS_LENGTH = 4 + TOTALS_GROUPS.length * 7;

/** BMP 60's bytes as totals; undefined when they do not have the layout of the notes. */
export function readTotals(value: Uint8Array): IndividualTotals | undefined {
  if (value.length !== TOTALS_LENGTH) return undefined;
  const bcd = (from: number, to: number) =>
    decimalFromBcd(Buffer.from(value.subarray(from, to)).toString('hex'));
  const firstReceipt = bcd(0, 2);
  const lastReceipt = bcd(2, 4);
  if (firstReceipt === undefined || lastReceipt === undefined) return undefined;
  const groups = {} as IndividualTotals['groups'];
  for (const [index, group] of TOTALS_GROUPS.entries()) {
    const at = 4 + index * 7;
    const total = bcd(at + 1, at + 7);
    if (total === undefined) return undefined;
    groups[group] = { count: value[at] as number, total };
  }
  return { firstReceipt, lastReceipt, groups };
}

export function totalsBytes(totals: IndividualTotals): Buffer {
  return Buffer.concat([
    Buffer.from(decimalNibbles(totals.firstReceipt, 2), 'hex'),
    Buffer.from(decimalNibbles(totals.lastReceipt, 2), 'hex'),
    ...TOTALS_GROUPS.map((group) => {
      const { count, total } = totals.groups[group];
      if (!Number.isInteger(count) || count < 0 || count > 0xff) {
        throw new RangeError(`a totals count is one byte: ${count}`);
      }
      return Buffer.concat([Buffer.from([count]), Buffer.from(decimalNibbles(total, 6), 'hex')]);
    }),
  ]);
}
