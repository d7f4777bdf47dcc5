/**
 * A 04 0F (status information) as the spec's Transaction fields. Every value is checked
 * against the field's pattern and left out when it does not fit: a terminal's odd field
 * never costs the result. docs/zvt.md has the table.
 */
import type { z } from 'zod';
import type { TransactionResultDetails } from '../../../protocol/terminal-link.js';
import type { CARD_SCHEMES } from '../../../protocol/transaction.js';
import { maskCardNumber, PaymentMethodDetails } from '../../../protocol/transaction.js';
import { findBmp, type Bmp } from '../bmp.js';
import type { BmpValues } from '../bmp-values.js';
import { findTlv, isConstructed, type Tlv } from '../tlv.js';

type CardScheme = (typeof CARD_SCHEMES)[number];
type Details = z.infer<typeof TransactionResultDetails>;
type MethodDetails = z.infer<typeof PaymentMethodDetails>;

/** ZVT card-type IDs (BMP 8A, §6.6) to the spec's card schemes. */
export const CARD_TYPE_SCHEMES: ReadonlyMap<number, CardScheme> = new Map([
  [0x02, 'GIROCARD'],
  [0x05, 'GIROCARD'],
  [0x06, 'MASTERCARD'],
  [0x08, 'AMEX'],
  [0x0a, 'VISA'],
  [0x0b, 'VISA'],
  [0x0c, 'DINERS_CLUB'],
  [0x0d, 'VISA'],
  [0x0e, 'JCB'],
  [0x2e, 'MASTERCARD'],
  [0xc4, 'DANKORT'],
  [0xc6, 'UNIONPAY'],
]);

/** TLV 1F12 card technology → card_entry_mode. */
const ENTRY_MODES = { 0: 'MAGNETIC_STRIPE', 1: 'CONTACT_EMV', 2: 'CONTACTLESS_EMV' } as const;
/** TLV 1F10 cardholder authentication → cardholder_verification. */
const VERIFICATIONS = {
  0: 'NONE',
  1: 'SIGNATURE',
  2: 'PIN',
  3: 'PIN',
  4: 'PIN',
  5: 'PIN_AND_SIGNATURE',
  6: 'PIN_AND_SIGNATURE',
  7: 'PIN_AND_SIGNATURE',
} as const;

function primitiveValue(items: readonly Tlv[], tag: number): Buffer | undefined {
  const found = findTlv(items, tag);
  return found && !isConstructed(found) ? found.value : undefined;
}

/**
 * `YYMMDDhhmmss` from BMP 0D (MMDD) and 0C (hhmmss): the year is the clock's, or the one
 * before when that date would lie more than a day ahead (a payment made on 31 December
 * and read on 1 January).
 */
export function acquirerTimestamp(
  date: string | undefined,
  time: string | undefined,
  now: Date,
): string | undefined {
  if (!date || !time || !/^\d{4}$/.test(date) || !/^\d{6}$/.test(time)) return undefined;
  const month = Number(date.slice(0, 2));
  const day = Number(date.slice(2));
  if (month < 1 || month > 12 || day < 1 || day > 31) return undefined;
  let year = now.getUTCFullYear();
  if (Date.UTC(year, month - 1, day) > now.getTime() + 86_400_000) year -= 1;
  return `${String(year % 100).padStart(2, '0')}${date}${time}`;
}

/** The reference the driver reports: terminal id, receipt and trace number. */
export function referenceOf(values: BmpValues): string | undefined {
  if (values.receiptNumber === undefined && values.traceNumber === undefined) return undefined;
  const parts = [
    values.terminalId,
    values.receiptNumber === undefined ? undefined : String(values.receiptNumber).padStart(4, '0'),
    values.traceNumber === undefined ? undefined : String(values.traceNumber).padStart(6, '0'),
  ];
  return parts.filter((part) => part !== undefined).join('-');
}

/** The card and acquirer fields of a 04 0F; undefined when it names no card. */
export function paymentMethodOf(
  values: BmpValues,
  bmps: readonly Bmp[],
  now: Date,
): MethodDetails | undefined {
  const items = values.tlv?.items ?? [];
  const method: Record<string, unknown> = { payment_method: 'CARD' };
  // Some PTs send a girocard's number in clear (BMP 22): kept masked, as the spec stores it.
  const pan = values.pan === undefined ? undefined : maskCardNumber(values.pan);
  if (pan !== undefined) {
    method.card_number_merchant = pan;
    method.card_number_customer = pan;
  }
  const scheme = values.cardType === undefined ? undefined : CARD_TYPE_SCHEMES.get(values.cardType);
  if (scheme) method.card_scheme = scheme;
  else if (values.cardType !== undefined) method.card_scheme = 'UNKNOWN';
  const aid = findBmp(bmps, 0x3b);
  if (aid?.format === 'ascii' || aid?.format === 'text') {
    method.authorization_code = aid.value.replace(/\0+$/, '').trim().toUpperCase();
  }
  const application = primitiveValue(items, 0x43);
  if (application) method.application_identifier = application.toString('hex').toUpperCase();
  const name = values.cardName ?? primitiveValue(items, 0x44)?.toString('latin1');
  if (name)
    method.application_name = name
      .replace(/[^\x20-\x7e]/g, '')
      .trim()
      .slice(0, 16);
  const technology = primitiveValue(items, 0x1f12)?.[0];
  if (technology !== undefined && technology in ENTRY_MODES) {
    method.card_entry_mode = ENTRY_MODES[technology as keyof typeof ENTRY_MODES];
  }
  const verification = primitiveValue(items, 0x1f10)?.[0];
  if (verification !== undefined && verification in VERIFICATIONS) {
    method.cardholder_verification = VERIFICATIONS[verification as keyof typeof VERIFICATIONS];
  }
  // BMP 17 is 2 BCD bytes; the EMV card sequence number (5F34) is 00-99.
  const sequence = values.cardSequenceNumber;
  if (sequence && /^00\d{2}$/.test(sequence)) method.card_sequence_number = sequence.slice(2);
  if (values.terminalId) method.acquirer_terminal_id = values.terminalId;
  const timestamp = acquirerTimestamp(values.date, values.time, now);
  if (timestamp) method.acquirer_timestamp = timestamp;
  if (values.resultCodeAs !== undefined) {
    method.authorization_response_code = values.resultCodeAs
      .toString(16)
      .padStart(2, '0')
      .toUpperCase();
  }
  // Keep each field only if it fits its pattern: one odd field must not lose the result.
  const shape = PaymentMethodDetails.shape;
  const kept: Record<string, unknown> = { payment_method: 'CARD' };
  for (const [key, value] of Object.entries(method)) {
    const schema = shape[key as keyof typeof shape];
    if (schema && schema.safeParse(value).success) kept[key] = value;
  }
  return Object.keys(kept).length > 1 ? (kept as MethodDetails) : undefined;
}

/** The Transaction fields of a payment's (or refund's) 04 0F. */
export function detailsOf(
  values: BmpValues,
  bmps: readonly Bmp[],
  options: { approved: boolean; requested: number; now: Date },
): Details {
  const amount = values.amount ?? options.requested;
  const details: Details = {
    authorized_amount: options.approved ? amount : 0,
    ...(options.approved ? { total_amount: amount } : {}),
  };
  const reference = referenceOf(values);
  if (reference) details.reference = reference;
  const method = paymentMethodOf(values, bmps, options.now);
  if (method) details.payment_method_details = method;
  return details;
}
