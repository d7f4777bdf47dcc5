/**
 * The terminal's receipts (06 D1 print lines, 06 D3 text blocks) as the spec's receipt
 * text: at most 31 lines of at most 32 printable ASCII characters, each ending in "\n".
 *
 * - Characters: German letters are spelled out (ä → ae, ß → ss), € → EUR, other letters
 *   lose their accents (é → e), tabs become a space, anything else not printable ASCII
 *   becomes "?". Trailing spaces are dropped.
 * - Width: a longer line wraps at its last space within 32 characters (a word longer than
 *   32 is cut); the continuation is indented by one space so it reads as one item.
 * - Height: runs of blank lines collapse to one, leading and trailing blank lines go; a
 *   receipt still longer than 31 lines keeps its first 30 and ends with a marker line
 *   saying how many lines the terminal's own copy has more (the terminal keeps it: Repeat
 *   Receipt prints it again).
 * - Which copy: a 06 D3 says it (TLV 1F07: 01 merchant, 02 customer). 06 D1 lines come in
 *   receipts ended by a "last line" attribute (1xxx xxxx); the first is the merchant copy
 *   and the second the customer copy, the order PTs print in unless told otherwise (TLV
 *   1F04 bit 08); a lone receipt is the customer's.
 */
import { decodeCp437, encodeCp437 } from '../encodings.js';
import type { PrintLine, PrintTextBlock } from '../message-types.js';
import { findAllValues, findTlv, isConstructed } from '../tlv.js';
import type { ZvtCharset } from './profiles.js';

export const RECEIPT_WIDTH = 32;
export const RECEIPT_LINES = 31;

const SPELLED: Readonly<Record<string, string>> = {
  ä: 'ae',
  ö: 'oe',
  ü: 'ue',
  Ä: 'Ae',
  Ö: 'Oe',
  Ü: 'Ue',
  ß: 'ss',
  '€': 'EUR',
  '£': 'GBP',
  '¥': 'JPY',
  Æ: 'AE',
  æ: 'ae',
  Ø: 'O',
  ø: 'o',
  Å: 'A',
  å: 'a',
  '½': '1/2',
  '¼': '1/4',
  '°': 'o',
  µ: 'u',
  '\t': ' ',
};

/** One line of terminal text as printable ASCII, trailing spaces dropped. */
export function asciiLine(text: string): string {
  let out = '';
  for (const char of text) {
    const spelled = SPELLED[char];
    if (spelled !== undefined) {
      out += spelled;
      continue;
    }
    if (char >= ' ' && char <= '~') {
      out += char;
      continue;
    }
    const base = char.normalize('NFD').replace(/[\u0300-\u036f]/g, '');
    out += /^[\x20-\x7e]+$/.test(base) ? base : '?';
  }
  return out.trimEnd();
}

/** A line wrapped to the receipt width. */
export function wrapLine(line: string, width = RECEIPT_WIDTH): string[] {
  const out: string[] = [];
  let rest = line;
  while (rest.length > width) {
    const space = rest.lastIndexOf(' ', width);
    const cut = space > 0 ? space : width;
    out.push(rest.slice(0, cut).trimEnd());
    rest = ` ${rest.slice(cut).trimStart()}`;
    if (rest.trim() === '') rest = '';
  }
  out.push(rest);
  return out;
}

/** Lines of terminal text as receipt text; undefined when nothing printable is left. */
export function receiptText(lines: readonly string[]): string | undefined {
  const wrapped = lines.flatMap((line) => wrapLine(asciiLine(line)));
  const kept: string[] = [];
  for (const line of wrapped) {
    if (line === '' && (kept.length === 0 || kept.at(-1) === '')) continue;
    kept.push(line);
  }
  while (kept.at(-1) === '') kept.pop();
  if (kept.length === 0) return undefined;
  if (kept.length > RECEIPT_LINES) {
    const more = kept.length - (RECEIPT_LINES - 1);
    kept.splice(RECEIPT_LINES - 1);
    kept.push(`(${more} more lines on terminal)`.slice(0, RECEIPT_WIDTH));
  }
  return kept.map((line) => `${line}\n`).join('');
}

/** Text from the PT's bytes as decoded (CP437), read again in the profile's charset. */
export function recode(text: string, charset: ZvtCharset): string {
  if (charset === 'cp437') return text;
  return new TextDecoder(charset).decode(encodeCp437(text));
}

export interface Receipts {
  merchant?: string;
  customer?: string;
}

/** A 06 D3's receipt type (1F07), charset (14) and lines (07 inside 25). */
export function textBlockLines(
  block: PrintTextBlock,
  charset: ZvtCharset,
): { type?: number; lines: string[] } {
  const tlv = block.bmps.find((bmp) => bmp.format === 'tlv');
  if (tlv?.format !== 'tlv') return { lines: [] };
  const items = tlv.value.items;
  const typeTlv = findTlv(items, 0x1f07);
  const type = typeTlv && !isConstructed(typeTlv) ? typeTlv.value[0] : undefined;
  const charsetTlv = findTlv(items, 0x14);
  const announced =
    charsetTlv && !isConstructed(charsetTlv) ? charsetOf(charsetTlv.value[0]) : undefined;
  const texts = findTlv(items, 0x25);
  const values = texts && isConstructed(texts) ? findAllValues(texts.items, 0x07) : [];
  const decode = (bytes: Buffer) =>
    announced === 'utf-8'
      ? bytes.toString('utf8')
      : recode(decodeCp437(bytes), announced ?? charset);
  return { ...(type === undefined ? {} : { type }), lines: values.map(decode) };
}

/** TLV 14 values (§3.1) the driver reads; others fall back to the profile's. */
function charsetOf(code: number | undefined): ZvtCharset | 'utf-8' | undefined {
  switch (code) {
    case 0xff:
      return 'cp437';
    case 0xfe:
      return 'utf-8';
    case 0x01:
      return 'iso-8859-1';
    case 0x02:
      return 'iso-8859-2';
    case 0x0f:
      return 'iso-8859-15';
    default:
      return undefined;
  }
}

/** Whether a print attribute marks the last line of a receipt (1xxx xxxx, not 80 or FF). */
export function isLastLine(attribute: number): boolean {
  return (attribute & 0x80) !== 0 && attribute !== 0x80 && attribute !== 0xff;
}

/** The receipts of a command: its print lines and text blocks, as merchant and customer copy. */
export function receiptsOf(
  lines: readonly PrintLine[],
  blocks: readonly PrintTextBlock[],
  charset: ZvtCharset,
): Receipts {
  const merchant: string[] = [];
  const customer: string[] = [];
  const untyped: string[][] = [];
  let current: string[] = [];
  for (const line of lines) {
    // FF is a line feed of n lines (the count follows in the text).
    if (line.attribute === 0xff) current.push('');
    else current.push(recode(line.text, charset));
    if (isLastLine(line.attribute)) {
      untyped.push(current);
      current = [];
    }
  }
  if (current.length > 0) untyped.push(current);
  for (const block of blocks) {
    const { type, lines: text } = textBlockLines(block, charset);
    if (type === 0x01) merchant.push(...text);
    else if (type === 0x02) customer.push(...text);
    else if (type !== 0x03) untyped.push(text);
  }
  if (untyped.length === 1 && customer.length === 0) customer.push(...(untyped[0] ?? []));
  else {
    if (merchant.length === 0 && untyped[0]) merchant.push(...untyped[0]);
    if (customer.length === 0 && untyped[1]) customer.push(...untyped[1]);
  }
  const out: Receipts = {};
  const m = receiptText(merchant);
  const c = receiptText(customer);
  if (m !== undefined) out.merchant = m;
  if (c !== undefined) out.customer = c;
  return out;
}
