/**
 * Receipt text of the emulated card reader. Every receipt keeps the spec's receipt limits
 * (1-31 lines, each 0-32 printable ASCII characters and terminated by a newline, at most
 * 1023 characters in all). Pure: dates arrive already formatted.
 */
import { formatMinorUnits, minorUnitDigits } from '../../protocol/currencies.js';
import type { Dcc, PaymentMethodDetails } from '../../protocol/transaction.js';

const WIDTH = 32;
const MAX_LINES = 31;

/** Number of decimals of the currency's minor unit. */
export const currencyExponent = minorUnitDigits;

/** An amount in minor units shown in major units with the currency: `EUR 12.34`. */
export const formatAmount = formatMinorUnits;

export interface ReceiptFacts {
  kind: 'PURCHASE' | 'REFUND' | 'ACCOUNT_CHECK';
  currency: string;
  requestedAmount: number;
  /** Present on success only. */
  charged?: { total: number; tip?: number; surcharge?: number; cashback?: number };
  card?: PaymentMethodDetails;
  dcc?: Dcc;
  reference: string;
  acquirerTerminalId: string;
  /** `YYYY-MM-DD` and `HH:MM:SS`. */
  date: string;
  time: string;
  /** English reason; present exactly when the transaction failed. */
  failure?: string;
}

export interface Receipts {
  customer: string;
  merchant: string;
}

type Copy = 'CUSTOMER' | 'MERCHANT';

const TITLES = { PURCHASE: 'PURCHASE', REFUND: 'REFUND', ACCOUNT_CHECK: 'ACCOUNT CHECK' } as const;
const FAILED = { PURCHASE: 'PAYMENT', REFUND: 'REFUND', ACCOUNT_CHECK: 'ACCOUNT CHECK' } as const;
const ENTRY_TEXT = {
  CONTACT_EMV: 'CHIP',
  CONTACTLESS_EMV: 'CONTACTLESS',
  MAGNETIC_STRIPE: 'MAGSTRIPE',
  MANUAL: 'MANUAL ENTRY',
} as const;

export function buildReceipts(facts: ReceiptFacts): Receipts {
  return { customer: receipt(facts, 'CUSTOMER'), merchant: receipt(facts, 'MERCHANT') };
}

function receipt(facts: ReceiptFacts, copy: Copy): string {
  const lines = [
    center(TITLES[facts.kind]),
    ...row(facts.date, facts.time),
    ...row('TERMINAL', facts.acquirerTerminalId),
    ...cardRows(facts.card, copy),
    ...amountRows(facts),
    ...dccRows(facts.dcc, facts.currency),
    ...authorizationRows(facts.card),
    ...row('REF', facts.reference),
    ...(facts.failure === undefined ? verificationRows(facts.card, copy) : []),
    '',
    ...outcomeRows(facts),
    center(`${copy} COPY`),
  ];
  // Safety net: the rows above stay well inside the limits for every scenario.
  return lines
    .slice(0, MAX_LINES)
    .map((line) => `${line.replace(/[^\x20-\x7e]/g, '?').slice(0, WIDTH)}\n`)
    .join('');
}

function cardRows(card: PaymentMethodDetails | undefined, copy: Copy): string[] {
  if (!card) return [];
  const number = copy === 'CUSTOMER' ? card.card_number_customer : card.card_number_merchant;
  return [
    ...(card.application_name ? [card.application_name] : []),
    ...row(card.card_scheme ?? 'CARD', number ?? ''),
    ...(card.card_entry_mode ? row('ENTRY', ENTRY_TEXT[card.card_entry_mode]) : []),
    ...optionalRow('AID', card.application_identifier),
    ...optionalRow('PSN', card.card_sequence_number),
  ];
}

function amountRows(facts: ReceiptFacts): string[] {
  const money = (amount: number) => formatAmount(amount, facts.currency);
  const amount = row('AMOUNT', money(facts.requestedAmount));
  const charged = facts.charged;
  if (!charged) return amount;
  const extra = (label: string, value?: number) =>
    value === undefined ? [] : row(label, money(value));
  return [
    ...amount,
    ...extra('TIP', charged.tip),
    ...extra('SURCHARGE', charged.surcharge),
    ...extra('CASHBACK', charged.cashback),
    ...row('TOTAL', money(charged.total)),
  ];
}

function dccRows(dcc: Dcc | undefined, currency: string): string[] {
  if (!dcc?.customer_currency || dcc.customer_amount === undefined) return [];
  const rate = dcc.exchange_rate_precise ?? (dcc.exchange_rate ?? 0) * 100;
  return [
    ...row('CARD TOTAL', formatAmount(dcc.customer_amount, dcc.customer_currency)),
    ...row('RATE', `1 ${currency} = ${decimal(rate, 6)} ${dcc.customer_currency}`),
    ...optionalRow(
      'MARKUP',
      dcc.markup_fee === undefined ? undefined : `${decimal(dcc.markup_fee, 2)}%`,
    ),
    ...optionalRow('RATE DATE', dcc.exchange_rate_date),
    ...wrap(`RATES: ${dcc.exchange_rate_provider ?? dcc.provider ?? 'DCC'}`),
  ];
}

function authorizationRows(card: PaymentMethodDetails | undefined): string[] {
  return [
    ...optionalRow('AUTH CODE', card?.authorization_code),
    ...optionalRow('RESPONSE', card?.authorization_response_code),
    ...optionalRow('ACQ REF', card?.acquirer_reference),
  ];
}

function verificationRows(card: PaymentMethodDetails | undefined, copy: Copy): string[] {
  const signature =
    copy === 'MERCHANT' ? ['', 'CARDHOLDER SIGNATURE', '', 'X'.padEnd(WIDTH, '_')] : ['SIGNED'];
  switch (card?.cardholder_verification) {
    case 'PIN':
      return ['PIN VERIFIED'];
    case 'CONSUMER_DEVICE':
      return ['VERIFIED ON DEVICE'];
    case 'SIGNATURE':
      return signature;
    case 'PIN_AND_SIGNATURE':
      return ['PIN VERIFIED', ...signature];
    default:
      return [];
  }
}

function outcomeRows(facts: ReceiptFacts): string[] {
  if (facts.failure === undefined) return [center('APPROVED')];
  return [
    center(`${FAILED[facts.kind]} FAILED`),
    ...wrap(facts.failure.toUpperCase()).map(center),
    center(facts.kind === 'REFUND' ? 'NOTHING REFUNDED' : 'NO AMOUNT CHARGED'),
  ];
}

/** `label` on the left and `value` on the right; a long value goes on lines of its own. */
function row(label: string, value: string): string[] {
  if (label.length + 1 + value.length <= WIDTH) {
    return [label + value.padStart(WIDTH - label.length)];
  }
  return [label, ...chunks(value)];
}

function optionalRow(label: string, value: string | undefined): string[] {
  return value === undefined ? [] : row(label, value);
}

function center(text: string): string {
  return text.padStart(Math.floor((WIDTH + text.length) / 2));
}

/** Word-wraps text into lines of at most WIDTH characters. */
function wrap(text: string): string[] {
  const lines: string[] = [];
  let current = '';
  for (const word of text.split(' ').flatMap(chunks)) {
    if (current && current.length + 1 + word.length > WIDTH) {
      lines.push(current);
      current = word;
    } else {
      current = current ? `${current} ${word}` : word;
    }
  }
  return current ? [...lines, current] : lines;
}

function chunks(text: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += WIDTH) out.push(text.slice(i, i + WIDTH));
  return out;
}

/** An integer with `places` implied decimals, as text: decimal(1087654, 6) = `1.087654`. */
function decimal(value: number, places: number): string {
  const digits = String(value).padStart(places + 1, '0');
  return `${digits.slice(0, -places)}.${digits.slice(-places)}`;
}
