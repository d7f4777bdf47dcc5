/**
 * The terminal's receipts (06 D1 print lines, 06 D3 text blocks) as the spec's receipt
 * text: at most 31 lines of at most 32 printable ASCII characters, each ending in "\n".
 *
 * - Characters: German letters are spelled out (ä → ae, ß → ss), € → EUR, other letters
 *   lose their accents (é → e), tabs become a space, anything else not printable ASCII
 *   becomes "?". Trailing spaces are dropped.
 * - Width: receipts of 40-column terminals are fitted, not folded. A line over 32 has its
 *   runs of spaces collapsed first: `Label:          value` becomes the label and the value
 *   apart at the right margin when both fit in 32 (as the terminal lays them out), else
 *   one space apart; a centred line loses its margins and is centred again. Only what
 *   still does not fit wraps, at its last space within 32 characters (a word longer than
 *   32 is cut), the continuation indented by one space so it reads as one item.
 * - Height: runs of blank lines collapse to one, leading and trailing blank lines go; a
 *   receipt still longer than 31 lines loses lines until it fits with a marker line saying
 *   how many the terminal's own copy has more (the terminal keeps it: Repeat Receipt prints
 *   it again): blank lines first, then from the bottom lines that carry no amount, outcome
 *   or reference (`keepsLine`), and those only last.
 * - Which copy: a 06 D3 says it (TLV 1F07: 01 merchant, 02 customer). 06 D1 lines come in
 *   receipts ended by a "last line" attribute (1xxx xxxx); the first is the merchant copy
 *   and the second the customer copy, the order PTs print in unless told otherwise (TLV
 *   1F04 bit 08); a lone receipt is the customer's.
 */
import { announcedCharset, decodeZvtText } from '../charsets.js';
import { encodeCp437 } from '../encodings.js';
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
  let rest = fitLine(line, width);
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

/**
 * A line over `width` made to fit by its spaces and fill characters where it can: a rule
 * (`-----`, `--TOTAL--`) shortened on both sides, a centred line centred again, columns
 * apart by runs of spaces (`label      value`) with each run shrunk in proportion, the last
 * column at the right margin; what still does not fit keeps single spaces.
 */
export function fitLine(line: string, width = RECEIPT_WIDTH): string {
  if (line.length <= width) return line;
  const text = line.trim();
  const rule = /^([-=*_~#.])\1+(.*?)\1*$/.exec(text);
  if (rule && !rule[2]?.includes('  ')) {
    const fill = rule[1] as string;
    const inner = (rule[2] ?? '').replace(new RegExp(`^\\${fill}+|\\${fill}+$`, 'g'), '');
    const room = width - inner.length;
    if (room >= 2 || inner === '') {
      const left = Math.floor(room / 2);
      return `${fill.repeat(left)}${inner}${fill.repeat(room - left)}`;
    }
  }
  if (text.length <= width && !/ {2}/.test(text)) {
    return `${' '.repeat(Math.floor((width - text.length) / 2))}${text}`;
  }
  const columns = text.split(/ {2,}/);
  const gaps = text.match(/ {2,}/g)?.map((gap) => gap.length) ?? [];
  const room = width - columns.join('').length;
  if (columns.length >= 2 && room >= gaps.length) {
    const total = gaps.reduce((sum, gap) => sum + gap, 0);
    const shrunk = gaps.map((gap) => Math.max(1, Math.floor((gap * room) / total)));
    shrunk[shrunk.length - 1] = room - shrunk.slice(0, -1).reduce((sum, gap) => sum + gap, 0);
    if ((shrunk.at(-1) as number) >= 1) {
      return columns.map((column, i) => `${column}${' '.repeat(shrunk[i] ?? 0)}`).join('');
    }
  }
  return text.replace(/ {2,}/g, ' ');
}

/**
 * Lines a cut receipt keeps to the last: an amount (`25,00`, `EUR`), the outcome
 * (approved, declined, genehmigt…) and the references to find the payment again (receipt,
 * trace, terminal, authorisation numbers).
 */
const KEEP =
  /\d[.,]\d\d\b|\b(EUR|CHF|USD|GBP|betrag|amount|total|summe|gesamt)\b|approv|declin|reject|cancel|abort|abbruch|genehmig|abgelehnt|erfolg|storn|success|fail|beleg|receipt|trace|ta-no|terminal|\btid\b|auth|ref|trx/i;

export function keepsLine(line: string): boolean {
  return KEEP.test(line);
}

/** Lines of terminal text as receipt text; undefined when nothing printable is left. */
export function receiptText(lines: readonly string[]): string | undefined {
  const wrapped = lines.flatMap((line) => wrapLine(asciiLine(line)));
  let kept: string[] = [];
  for (const line of wrapped) {
    if (line === '' && (kept.length === 0 || kept.at(-1) === '')) continue;
    kept.push(line);
  }
  while (kept.at(-1) === '') kept.pop();
  if (kept.length === 0) return undefined;
  if (kept.length > RECEIPT_LINES) {
    const total = kept.length;
    kept = cutToFit(kept, RECEIPT_LINES - 1);
    kept.push(`(${total - kept.length} more lines on terminal)`.slice(0, RECEIPT_WIDTH));
  }
  return kept.map((line) => `${line}\n`).join('');
}

/** `lines` cut to `room`, in order, dropping blank lines, then others, then kept ones, from the bottom. */
function cutToFit(lines: readonly string[], room: number): string[] {
  const dropped = new Set<number>();
  const rounds: ((line: string) => boolean)[] = [
    (line) => line.trim() === '',
    (line) => !keepsLine(line),
    () => true,
  ];
  for (const drop of rounds) {
    for (let i = lines.length - 1; i >= 0 && lines.length - dropped.size > room; i--) {
      if (!dropped.has(i) && drop(lines[i] as string)) dropped.add(i);
    }
  }
  return lines.filter((_, i) => !dropped.has(i));
}

/** Text from the PT's bytes as decoded (CP437), read again in `charset`. */
export function recode(text: string, charset: string): string {
  if (charset === 'cp437') return text;
  return decodeZvtText(encodeCp437(text), charset);
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
  const texts = findTlv(items, 0x25);
  const values = texts && isConstructed(texts) ? findAllValues(texts.items, 0x07) : [];
  const used = announcedCharset(items) ?? charset;
  return {
    ...(type === undefined ? {} : { type }),
    lines: values.map((bytes) => decodeZvtText(bytes, used)),
  };
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
    else current.push(recode(line.text, (line.tlv && announcedCharset(line.tlv.items)) ?? charset));
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
