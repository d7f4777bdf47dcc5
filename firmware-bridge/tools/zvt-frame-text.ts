/**
 * One line of text per ZVT APDU, for the monitor:
 *
 * ```
 *   06 01 authorisation  04 amount=1234
 *   80 00 00 positive acknowledgement
 *   04 FF intermediate status  0A (insert card)
 *   04 0F status information  27 result-code=00 (no error) 04 amount=1234 49 currency=978 …
 *   06 D1 print line  attr 81 "        THANK YOU"
 *   06 0F completion  version "TPS-ZVT-EMULATOR-1.0" status 00 (PT ready)
 *   84 6B 00 negative acknowledgement 6B (function deactivated (PT not registered))
 * ```
 *
 * BMPs appear as `tag name=value`: amounts (minor units), trace, receipt numbers and
 * currency as decimal numbers, other BCD as its digits, bytes as hex, text quoted, binary
 * as hex. Texts over 60 characters are cut unless `full`. Text (TLV 07 lines) is read as
 * CP437 unless a TLV 14 in the same container announces another set.
 *
 * Card numbers: most terminals mask them, some send a girocard's in clear, so the monitor
 * masks every one itself (first 6 and last 4 digits, also with `full`), and any card number
 * in a text (common/card-numbers.ts: 12-19 digits passing the Luhn check); track data (BMP 23/24/2D, TLV 57), CVV and PIN data only by size.
 * `cardData: 'hidden'` (the fleet's trace, which leaves the terminal) also shows the PAN and
 * the expiry only by size, never the password, and data the codec cannot read only by size.
 * A 06 0F answering a command the codec does not know (`answers`) is shown as its data.
 */
import { BMP_SPECS, type Bmp } from '../zvt/bmp.js';
import { controlName, decodeApdu, hex, hexBytes } from '../zvt/apdu.js';
import type { DecodeContext, PrintLine, ZvtMessage } from '../zvt/message-types.js';
import { decodeMessage, isCommand, isPtMessage } from '../zvt/messages.js';
import { decimalFromBcd, encodeCp437 } from '../zvt/encodings.js';
import { maskCardNumbers } from '../../common/card-numbers.js';
import { maskCardNumber } from '../../protocol/transaction.js';
import { announcedCharset, decodeZvtText } from '../zvt/charsets.js';
import { isConstructed, type Tlv } from '../zvt/tlv.js';
import {
  controlText,
  intermediateStatusText,
  resultCodeText,
  terminalStatusText,
} from './zvt-names.js';

export type ZvtSender = 'ecr' | 'pt';

export interface ZvtApduText {
  text: string;
  /** Who sends such a message; undefined for acknowledgements (both sides send them). */
  sender?: ZvtSender;
  /** The message, when it decoded. */
  message?: ZvtMessage;
}

/** PT → ECR messages of class 06 (zvt-notes §5.1); every 04 is the PT's too. */
const PT_MESSAGES = new Set(['06 0F', '06 1E', '06 D1', '06 D3', '06 D0', '06 E4']);

export interface ApduTextOptions {
  /** `hidden`: card data (PAN, expiry, tracks…), the password and unread data by size only. */
  cardData?: 'shown' | 'hidden';
  /**
   * The control field of the running command when the codec does not know it (`0F A1`): a
   * 06 0F then answers a layout the codec cannot read, and is shown by its data.
   */
  answers?: string;
}

export function apduText(
  apdu: Buffer,
  context: DecodeContext = {},
  full = false,
  options: ApduTextOptions = {},
): ZvtApduText {
  const hide = options.cardData === 'hidden';
  const raw = (bytes: Buffer) => (hide ? `(${bytes.length} bytes)` : cut(hexBytes(bytes), full));
  const parsed = decodeApdu(apdu);
  if (!parsed.ok) {
    return { text: `undecodable APDU (${parsed.error.message}): ${raw(apdu)}` };
  }
  const { cls, ins } = parsed.value;
  const ack = cls === 0x80 || cls === 0x84;
  // An acknowledgement is named by its three bytes, as the notes write it (84 83 00); in the
  // long length form (80 00 FF lo hi, data follows) by its first two.
  const control =
    ack && apdu[2] !== 0xff ? hexBytes(apdu.subarray(0, 3)) : controlName(parsed.value);
  const name = ack ? undefined : controlText(cls, ins);
  const head = name ? `${control} ${name}` : control;
  if (options.answers !== undefined && control === '06 0F') {
    // Its layout is the unknown command's: the generic reading would call it undecodable.
    const data = parsed.value.data;
    const shown = data.length > 0 ? `  data ${raw(data)}` : '';
    return { text: `${head} (to ${options.answers})${shown}`, sender: 'pt' };
  }
  const decoded = decodeMessage(parsed.value, context);
  if (!decoded.ok) {
    const { code, offset, message } = decoded.error;
    return {
      text: `${head}  undecodable (${code} at ${offset}: ${message}): ${raw(apdu)}`,
      sender: senderOfControl(parsed.value.cls, control),
    };
  }
  const message = decoded.value;
  return {
    text: `${head}${bodyText(message, full, hide)}`,
    ...(message.type === 'ack' ? {} : { sender: senderOf(message, control) }),
    message,
  };
}

function senderOf(message: ZvtMessage, control: string): ZvtSender | undefined {
  if (isCommand(message)) return 'ecr';
  if (isPtMessage(message)) return 'pt';
  return message.type === 'other' ? senderOfControl(message.cls, control) : undefined;
}

function senderOfControl(cls: number, control: string): ZvtSender | undefined {
  if (cls === 0x80 || cls === 0x84) return undefined;
  return cls === 0x04 || PT_MESSAGES.has(control) ? 'pt' : 'ecr';
}

function bodyText(message: ZvtMessage, full: boolean, hide: boolean): string {
  const password = (value: string) => `password ${hide ? '(not shown)' : value}`;
  const parts: string[] = [];
  switch (message.type) {
    case 'ack':
      if (message.cls === 0x80) parts.push('positive acknowledgement');
      else if (message.code === 0x00) parts.push('positive acknowledgement (84 00)');
      else parts.push(`negative acknowledgement ${resultCodeText(message.code)}`);
      if (message.data.length > 0) {
        parts.push(
          message.bmps
            ? bmpsText(message.bmps, full, {}, hide)
            : `data ${hide ? `(${message.data.length} bytes)` : hexBytes(message.data)}`,
        );
      }
      return ` ${parts.join(' ')}`;
    case 'registration':
      parts.push(
        password(message.password),
        `config ${hex(message.config)}`,
        ...(message.currency === undefined ? [] : [`currency ${message.currency}`]),
      );
      break;
    case 'reversal':
    case 'refund':
    case 'end-of-day':
    case 'repeat-receipt':
    case 'status-enquiry':
      if (message.password !== undefined) parts.push(password(message.password));
      break;
    case 'intermediate-status':
      parts.push(intermediateStatusText(message.status));
      if (message.timeout !== undefined) parts.push(`timeout ${message.timeout} s`);
      break;
    case 'print-line':
      parts.push(`attr ${hex(message.attribute)}`, quote(printLineText(message), full));
      if (message.tlv) parts.push(`06 tlv=${tlvText(message.tlv.items, full, hide)}`);
      break;
    case 'completion':
      if (message.status) {
        const { softwareVersion, terminalStatus } = message.status;
        if (softwareVersion !== undefined) parts.push(`version ${quote(softwareVersion, full)}`);
        parts.push(`status ${terminalStatusText(terminalStatus)}`);
      }
      break;
    case 'abort':
      parts.push(
        message.resultCode === undefined
          ? 'no result code'
          : `result ${resultCodeText(message.resultCode)}`,
      );
      if (message.currency !== undefined) parts.push(`currency ${message.currency}`);
      break;
    case 'other':
      if (message.data.length > 0) {
        parts.push(
          `data ${hide ? `(${message.data.length} bytes)` : cut(hexBytes(message.data), full)}`,
        );
      }
      return parts.length > 0 ? `  ${parts.join(' ')}` : '';
    case 'log-off':
    case 'abort-command':
      return '';
    default:
      break;
  }
  if ('bmps' in message && message.bmps.length > 0) {
    // BMP 19 of a completion is the terminal's status byte, elsewhere the payment type.
    const names: Record<number, string> =
      message.type === 'completion' ? { 0x19: 'status-byte' } : {};
    parts.push(bmpsText(message.bmps, full, names, hide));
  }
  return parts.length > 0 ? `  ${parts.join(' ')}` : '';
}

export function bmpsText(
  bmps: readonly Bmp[],
  full = false,
  names: Readonly<Record<number, string>> = {},
  hide = false,
): string {
  return bmps.map((bmp) => bmpText(bmp, full, names[bmp.tag], hide)).join(' ');
}

/** BCD fields that are numbers (amount in minor units, trace, receipt, currency…). */
const DECIMAL_TAGS: ReadonlySet<number> = new Set([0x04, 0x0b, 0x37, 0x49, 0x87, 0x88]);

/**
 * Card data a PT never sends unmasked to an ECR, but an ECR may send (manual entry): track
 * data, CVV, PIN data. Monitor output gets pasted into tickets, so only their size is shown.
 */
const SECRET_TAGS: ReadonlySet<number> = new Set([0x23, 0x24, 0x2d, 0x3a, 0xd1]);
/** Masked by the terminal, but not by every one: hidden where the text leaves the terminal. */
const CARD_TAGS: ReadonlySet<number> = new Set([0x0e, 0x22]);

function bmpText(bmp: Bmp, full: boolean, alias: string | undefined, hide: boolean): string {
  const name = alias ?? BMP_SPECS.get(bmp.tag)?.name ?? 'unknown';
  const label = `${hex(bmp.tag)} ${name}`;
  if (SECRET_TAGS.has(bmp.tag) || (hide && CARD_TAGS.has(bmp.tag))) {
    return `${label}=(${valueBytes(bmp)} bytes, not shown)`;
  }
  // The PAN as printed (E is a masked digit, F pads), masked again: not every PT masks it.
  if (bmp.tag === 0x22 && bmp.format === 'bcd') {
    const digits = bmp.value.replace(/F+$/, '').replaceAll('E', '*');
    return `${label}=${maskCardNumber(digits) ?? `(${digits.length} digits, not shown)`}`;
  }
  switch (bmp.format) {
    case 'byte':
      if (bmp.tag === 0x27 || bmp.tag === 0xa0) return `${label}=${resultCodeText(bmp.value)}`;
      return `${label}=${hex(bmp.value)}`;
    case 'bcd': {
      const number = DECIMAL_TAGS.has(bmp.tag) ? decimalFromBcd(bmp.value) : undefined;
      return `${label}=${number ?? bmp.value}`;
    }
    case 'ascii':
    case 'text':
      return `${label}=${quote(bmp.value.replace(/\0+$/, ''), full)}`;
    case 'binary':
      return `${label}=${hide ? `(${bmp.value.length} bytes)` : cut(hexBytes(bmp.value), full)}`;
    case 'tlv':
      return `${label}=${tlvText(bmp.value.items, full, hide)}`;
  }
}

/** The size of a secret field's value (they are BCD or binary). */
function valueBytes(bmp: Bmp): number {
  if (bmp.format === 'bcd') return bmp.value.length / 2;
  return bmp.format === 'binary' ? bmp.value.length : 1;
}

/** A 06 D1's text (CP437 as decoded), read in the set its trailing TLV announces, if any. */
function printLineText(line: PrintLine): string {
  const announced = line.tlv && announcedCharset(line.tlv.items);
  return announced ? decodeZvtText(encodeCp437(line.text), announced) : line.text;
}

/** TLV tags of card data in EMV form: 5A PAN, 57 track 2 equivalent (by size only). */
const SECRET_TLV_TAGS: ReadonlySet<number> = new Set([0x57, 0x5a]);

/** `{1F07=02 25{07="line" 07="line"}}`; text in the charset a TLV 14 announces, else CP437. */
function tlvText(
  items: readonly Tlv[],
  full: boolean,
  hide = false,
  charset = announcedCharset(items) ?? 'cp437',
): string {
  const inner = items.map((item) => {
    const tag = item.tag.toString(16).toUpperCase().padStart(2, '0');
    if (isConstructed(item)) return `${tag}${tlvText(item.items, full, hide, charset)}`;
    if (SECRET_TLV_TAGS.has(item.tag)) return `${tag}=(${item.value.length} bytes, not shown)`;
    // Text lines (07) as text; everything else as hex (hidden: by size).
    if (item.tag === 0x07) return `${tag}=${quote(decodeZvtText(item.value, charset), full)}`;
    return `${tag}=${hide ? `(${item.value.length} bytes)` : cut(hexBytes(item.value), full)}`;
  });
  return `{${inner.join(' ')}}`;
}

function quote(text: string, full: boolean): string {
  return JSON.stringify(cut(maskCardNumbers(text), full));
}

function cut(text: string, full: boolean): string {
  if (full || text.length <= 60) return text;
  return `${text.slice(0, 40)}… (${text.length} chars)`;
}
