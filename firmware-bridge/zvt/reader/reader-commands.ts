/**
 * The ZVT driver's decisions that need no terminal: what it refuses before sending
 * anything (what ZVT cannot do), how it registers under a profile, and the screen text
 * of an intermediate status.
 */
import type { ReaderStart } from '../../reader/card-reader.js';
import { CONFIG, DEFAULT_CONFIG, registration } from '../command-builders.js';
import { announcedCharset, decodeZvtText } from '../charsets.js';
import type { IntermediateStatus, Registration } from '../message-types.js';
import { constructed, findAllValues, primitive } from '../tlv.js';
import { currencyNumber } from './currencies.js';
import type { ZvtProfile } from './profiles.js';
import { asciiLine } from './receipt-text.js';
import { intermediateStatusText, type MappedResult } from './result-codes.js';

/** A start the driver refuses without asking the terminal, or undefined. */
export function refusalOfStart(command: ReaderStart, currency: string): MappedResult | undefined {
  const refuse = (text: string) => ({ result_code: 'NOT_SUPPORTED', result_description: text });
  if (command.kind === 'ACCOUNT_CHECK') return refuse('A ZVT terminal has no account check');
  if (command.pause_on_customer_identified) {
    return refuse('A ZVT terminal cannot pause at customer identification');
  }
  if (command.cashback_amount !== undefined && command.cashback_amount > 0) {
    return refuse('Cashback is not supported on ZVT terminals');
  }
  if (command.currency.toUpperCase() !== currency || !currencyNumber(command.currency)) {
    return {
      result_code: 'WRONG_CURRENCY',
      result_description: `The terminal is registered for ${currency}`,
    };
  }
  return undefined;
}

/**
 * 06 00 as the driver sends it: config BE + 80 (the ECR prints every receipt, as 06 D1 /
 * 06 D3; amount entry and admin on the PT off; 04 FF on), the currency, and a TLV
 * container: empty (it activates TLV output, as PZ sends it), or for the text-blocks
 * profiles TLV 26 {0A 06 D3} permitting print text blocks (PZ).
 */
export function registrationFor(
  profile: ZvtProfile,
  password: string,
  currency: string,
): Registration {
  // A BMP 06, even empty, activates the PT's TLV output (entry mode, AID; zvt-notes §4).
  const tlv =
    profile.receipts === 'text-blocks'
      ? { items: [constructed(0x26, [primitive(0x0a, Buffer.from([0x06, 0xd3]))])] }
      : { items: [] };
  return registration({
    password,
    config: DEFAULT_CONFIG | CONFIG.receiptsAsPrintLines,
    currency: currencyNumber(currency) ?? null,
    tlv,
  });
}

/**
 * The PT's own display text (TLV 24 {07 …}) or the status code's text, 1-255 characters.
 * Display lines, whether separate 07s or one 07 holding a line feed (a VALINA sends
 * "Karte vorhalten" LF "einstecken/durchziehen"), are joined with " / ": a line feed has no
 * place in a one-line screen message, and a plain space would run the lines into one
 * sentence. A TLV 14 beside the 24 names the character set; else the profile's.
 */
export function screenTextOf(message: IntermediateStatus, profile: ZvtProfile): string {
  const tlv = message.bmps.find((bmp) => bmp.format === 'tlv');
  const items = tlv?.format === 'tlv' ? tlv.value.items : [];
  const charset = announcedCharset(items) ?? profile.charset;
  const lines = findAllValues(items, 0x07)
    .flatMap((bytes) => decodeZvtText(bytes, charset).split(/\r\n|\r|\n/))
    .map((line) => asciiLine(line).trim())
    .filter((line) => line !== '');
  const text = lines.join(' / ');
  return (text || intermediateStatusText(message.status, profile.extraIntermediateStatus)).slice(
    0,
    255,
  );
}
