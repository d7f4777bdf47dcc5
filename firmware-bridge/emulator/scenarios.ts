/**
 * What the emulated card reader does with a start command. The requested amount picks the
 * outcome (the simulator trigger table, docs/simulator.md); every other amount succeeds
 * after the normal delay. Pure: no clock, timer or randomness; equal inputs give equal
 * scenarios, and everything returned validates against the protocol schemas.
 */
import type {
  StartTransactionCommand,
  TransactionResultDetails,
} from '../../protocol/terminal-link.js';
import type { CustomerIdentity, Dcc, PaymentMethodDetails } from '../../protocol/transaction.js';
import { buildReceipts, currencyExponent } from './receipts.js';

export const MAX_AMOUNT = 999_999_999_999;

/** The members of a start command that decide the scenario; a whole command fits. */
export type ScenarioCommand = Pick<
  StartTransactionCommand,
  | 'kind'
  | 'requested_amount'
  | 'currency'
  | 'cashback_amount'
  | 'customer_not_present'
  | 'pause_on_customer_identified'
>;

export interface ScenarioContext {
  /** Numeric serial of the terminal: gives acquirer_terminal_id and unique references. */
  terminalSerial: number;
  /** Per-terminal transaction counter: gives acquirer_reference NNNNNN and reference. */
  sequence: number;
  now: Date;
}

/** instant: at once; normal: the configured base delay; fixed: exactly `ms`. */
export type ScenarioDelay =
  { kind: 'instant' } | { kind: 'normal' } | { kind: 'fixed'; ms: number };

export interface Scenario {
  /** How long the reader works before the result (after the continue, when it pauses). */
  delay: ScenarioDelay;
  /** Whether the reader stops at the customer-identified point and waits for a continue. */
  pause: boolean;
  /** The identity to report at the pause; also in `details` (always for 100021). */
  customerIdentity?: CustomerIdentity;
  result_code: EmulatorResultCode;
  /** English, printable ASCII; only for errors. */
  result_description?: string;
  details: TransactionResultDetails;
}

/** Every result code the emulator produces, with its meaning (also its result_description). */
export const resultCodes = [
  { code: 'SUCCESS', meaning: 'The payment, refund or account check succeeded.' },
  { code: 'PROCESSOR_REJECTED', meaning: 'The payment processor rejected the transaction.' },
  { code: 'ABORTED', meaning: 'The customer cancelled the transaction on the terminal.' },
  { code: 'CARD_REMOVED', meaning: 'The card was removed before processing finished.' },
  { code: 'DECLINED_BY_ISSUER', meaning: 'The card issuer declined the transaction.' },
  { code: 'SYSTEM_ERROR', meaning: 'An internal error stopped the terminal system.' },
  { code: 'NETWORK_ERROR', meaning: 'The terminal could not reach the payment processor.' },
  { code: 'CARD_NOT_ACCEPTED', meaning: 'The card or payment method is not accepted here.' },
] as const satisfies readonly { code: string; meaning: string }[];

export type EmulatorResultCode = (typeof resultCodes)[number]['code'];

/** The scenario for a start command. */
export function scenarioFor(cmd: ScenarioCommand, ctx: ScenarioContext): Scenario {
  return build(cmd, ctx, cmd.requested_amount, cmd.pause_on_customer_identified);
}

/**
 * The scenario once a paused transaction is continued: the outcome stays the one the start
 * amount picked; the amounts (tip, surcharge, DCC, receipts) follow the continue's
 * `requested_amount` when it brings one. It never pauses again.
 */
export function scenarioAfterContinue(
  cmd: ScenarioCommand,
  ctx: ScenarioContext,
  requestedAmount: number = cmd.requested_amount,
): Scenario {
  return build(cmd, ctx, requestedAmount, false);
}

type EntryMode = NonNullable<PaymentMethodDetails['card_entry_mode']>;
type Verification = NonNullable<PaymentMethodDetails['cardholder_verification']>;
type Scheme = NonNullable<PaymentMethodDetails['card_scheme']>;

type Card = ReturnType<typeof card>;
function card(scheme: Scheme, bin: string, last4: string, aid: string, name: string) {
  return { scheme, bin, last4, aid, name };
}
const VISA = card('VISA', '476173', '0119', 'A0000000031010', 'VISA CREDIT');
const MASTERCARD = card('MASTERCARD', '541333', '4111', 'A0000000041010', 'MASTERCARD');
const GIROCARD = card('GIROCARD', '672559', '0013', 'A0000003591010028001', 'GIROCARD');
const JCB = card('JCB', '353011', '0000', 'A0000000651010', 'JCB');

/** How the card was read; `cvm` is absent when processing stopped before verification. */
interface Read {
  card: Card;
  entry: EntryMode;
  cvm?: Verification;
}
const tap = (cvm?: Verification, card = VISA): Read => ({ card, entry: 'CONTACTLESS_EMV', cvm });
const chip = (cvm?: Verification, card = MASTERCARD): Read => ({ card, entry: 'CONTACT_EMV', cvm });
const swipe = (cvm: Verification): Read => ({ card: VISA, entry: 'MAGNETIC_STRIPE', cvm });

interface Trigger {
  code: EmulatorResultCode;
  delay: ScenarioDelay;
  /** Absent when no card was read (unless the reader paused for identification). */
  read?: Read;
  /** authorization_response_code of a failed authorization. */
  responseCode?: string;
  extra?: 'TIP' | 'SURCHARGE' | 'DCC' | 'IDENTITY';
}

const NORMAL: ScenarioDelay = { kind: 'normal' };
const PLAIN: Trigger = { code: 'SUCCESS', delay: NORMAL, read: tap('NONE') };
const success = (read: Read): Trigger => ({ ...PLAIN, read });
const failure = (code: EmulatorResultCode, read?: Read, responseCode?: string): Trigger => ({
  code,
  delay: NORMAL,
  read,
  responseCode,
});

const TRIGGERS: ReadonlyMap<number, Trigger> = new Map([
  [100001, { ...PLAIN, delay: { kind: 'fixed', ms: 2_000 } }],
  [100002, { ...PLAIN, delay: { kind: 'instant' } }],
  [100003, failure('PROCESSOR_REJECTED', tap(), '12')],
  [100004, failure('ABORTED')],
  [100005, failure('CARD_REMOVED', chip())],
  [100006, failure('DECLINED_BY_ISSUER', tap(), '05')],
  [100007, failure('SYSTEM_ERROR')],
  [100008, failure('NETWORK_ERROR', tap())],
  [100009, failure('CARD_NOT_ACCEPTED', chip(undefined, JCB))],
  [100010, success(tap('PIN'))],
  [100011, success(tap('CONSUMER_DEVICE'))],
  [100012, success(chip('NONE'))],
  [100013, success(chip('PIN'))],
  [100014, success(swipe('SIGNATURE'))],
  [100015, success(swipe('PIN'))],
  [100016, success(chip('PIN', GIROCARD))],
  [100017, { ...PLAIN, extra: 'TIP' }],
  [100018, { ...PLAIN, extra: 'SURCHARGE' }],
  [100019, { ...PLAIN, extra: 'DCC' }],
  [100020, { ...PLAIN, delay: { kind: 'fixed', ms: 30_000 } }],
  [100021, { ...PLAIN, extra: 'IDENTITY' }],
]);

function build(cmd: ScenarioCommand, ctx: ScenarioContext, amount: number, pause: boolean) {
  const trigger = TRIGGERS.get(cmd.requested_amount) ?? PLAIN;
  const ids = identifiers(ctx);
  const approved = trigger.code === 'SUCCESS';
  const identified = cmd.pause_on_customer_identified || trigger.extra === 'IDENTITY';
  // Pausing at the identification point means a card was read, even if the outcome is an error.
  const read = trigger.read ?? (cmd.pause_on_customer_identified ? tap() : undefined);
  const card = read && cardDetails(read, cmd, ids, approved ? '00' : trigger.responseCode);
  const identity = identified ? identityOf(read?.card ?? VISA) : undefined;
  const charged = approved ? chargedAmounts(cmd, amount, trigger.extra) : undefined;
  const dcc =
    charged && trigger.extra === 'DCC' && cmd.kind === 'PURCHASE'
      ? dccFor(cmd.currency, charged.total, ids.date)
      : undefined;
  const description = resultCodes.find((entry) => entry.code === trigger.code)?.meaning;
  const receipts = buildReceipts({
    kind: cmd.kind,
    currency: cmd.currency,
    requestedAmount: amount,
    charged,
    card,
    dcc,
    reference: ids.reference,
    acquirerTerminalId: ids.terminalId,
    date: ids.date,
    time: ids.time,
    failure: approved ? undefined : description,
  });
  const details: TransactionResultDetails = defined({
    authorized_amount: charged?.authorized ?? 0,
    total_amount: charged?.total,
    tip_amount: charged?.tip,
    surcharge_amount: charged?.surcharge,
    cashback_amount: charged?.cashback,
    payment_method_details: card,
    receipt_details_customer: receipts.customer,
    receipt_details_merchant: receipts.merchant,
    reference: ids.reference,
    dcc,
    customer_identity: identity,
  });
  return defined<Scenario>({
    delay: trigger.delay,
    pause,
    customerIdentity: identity,
    result_code: trigger.code,
    result_description: approved ? undefined : description,
    details,
  });
}

/** Requested + cashback + tip + surcharge for purchases; tip and surcharge are clamped. */
function chargedAmounts(cmd: ScenarioCommand, requested: number, extra: Trigger['extra']) {
  if (cmd.kind === 'ACCOUNT_CHECK') return { authorized: 0, total: 0 };
  if (cmd.kind === 'REFUND') return { authorized: requested, total: requested };
  const base = Math.min(MAX_AMOUNT, requested + (cmd.cashback_amount ?? 0));
  const room = MAX_AMOUNT - base;
  const tip = extra === 'TIP' ? Math.min(room, Math.round(requested / 10)) : undefined;
  const surcharge =
    extra === 'SURCHARGE' ? Math.min(room, Math.round((requested * 15) / 1000)) : undefined;
  const total = base + (tip ?? 0) + (surcharge ?? 0);
  return { authorized: total, total, tip, surcharge, cashback: cmd.cashback_amount };
}

/** A fictitious rate of 1.087654 (markup included) into USD, or EUR for a USD purchase. */
const DCC_RATE_PRECISE = 1_087_654;

function dccFor(currency: string, total: number, date: string): Dcc {
  const customerCurrency = currency === 'USD' ? 'EUR' : 'USD';
  return {
    customer_amount: convert(total, currency, customerCurrency, DCC_RATE_PRECISE),
    customer_currency: customerCurrency,
    exchange_rate: Math.round(DCC_RATE_PRECISE / 100),
    exchange_rate_precise: DCC_RATE_PRECISE,
    exchange_rate_date: date,
    exchange_rate_provider: 'Emulated Reference Rates',
    markup_fee: 350,
    provider: 'Emulated DCC Provider',
  };
}

/** Minor units of `from` into minor units of `to` at a rate with 6 implied decimals. */
function convert(amount: number, from: string, to: string, ratePrecise: number): number {
  const numerator = BigInt(amount) * BigInt(ratePrecise) * 10n ** BigInt(currencyExponent(to));
  const denominator = 1_000_000n * 10n ** BigInt(currencyExponent(from));
  const rounded = (numerator * 2n + denominator) / (2n * denominator);
  return Number(rounded > BigInt(MAX_AMOUNT) ? BigInt(MAX_AMOUNT) : rounded);
}

function cardDetails(
  read: Read,
  cmd: ScenarioCommand,
  ids: Identifiers,
  /** '00' when authorized; a decline code, or nothing when no answer came. */
  responseCode: string | undefined,
): PaymentMethodDetails {
  const entry = cmd.customer_not_present ? 'MANUAL' : read.entry;
  const emv = entry === 'CONTACT_EMV' || entry === 'CONTACTLESS_EMV';
  return defined<PaymentMethodDetails>({
    payment_method: 'CARD',
    acquirer_reference: ids.acquirerReference,
    acquirer_terminal_id: ids.terminalId,
    acquirer_timestamp: ids.acquirerTimestamp,
    application_identifier: emv ? read.card.aid : undefined,
    application_name: emv ? read.card.name : undefined,
    authorization_code: responseCode === '00' ? ids.authorizationCode : undefined,
    authorization_response_code: responseCode,
    card_entry_mode: entry,
    card_number_customer: `${'*'.repeat(12)}${read.card.last4}`,
    card_number_merchant: `${read.card.bin}${'*'.repeat(6)}${read.card.last4}`,
    card_scheme: read.card.scheme,
    card_sequence_number: emv ? '01' : undefined,
    cardholder_verification: cmd.customer_not_present ? 'NONE' : read.cvm,
  });
}

type Identifiers = ReturnType<typeof identifiers>;

function identifiers(ctx: ScenarioContext) {
  const serial = counter(ctx.terminalSerial);
  const sequence = counter(ctx.sequence);
  // Clamped to the years 1970-9999, so that every date has the shapes the protocol allows.
  const time = Math.min(Math.max(ctx.now.getTime() || 0, 0), 253_402_300_799_999);
  const iso = new Date(time).toISOString(); // YYYY-MM-DDTHH:MM:SS.mmmZ
  const yymmdd = `${iso.slice(2, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}`;
  return {
    terminalId: pad36(serial % 36 ** 8, 8),
    // Serial, YY, MM, DD, sequence: no group of fewer than 12 digits, and 2-digit groups
    // between them, so no stretch of the reference reads as a card number
    // (common/card-numbers.ts) and a receipt that prints it is never masked; as
    // `serial-YYMMDD-sequence` one terminal in ten printed one that did.
    reference: [
      serial % 100_000_000,
      ...[iso.slice(2, 4), iso.slice(5, 7), iso.slice(8, 10)],
      pad(sequence % 10_000_000_000, 6),
    ].join('-'),
    acquirerReference: `${yymmdd}${pad(sequence % 1_000_000, 6)}`,
    acquirerTimestamp: `${yymmdd}${iso.slice(11, 19).replaceAll(':', '')}`,
    authorizationCode: chars(`auth:${serial}:${sequence}:${yymmdd}`, ALPHANUMERIC, 6),
    /** `YYYY-MM-DD` and `HH:MM:SS`, UTC. */
    date: iso.slice(0, 10),
    time: iso.slice(11, 19),
  };
}

/** Stable per card, like a real token: the same card always gives the same identity. */
function identityOf(card: Card): CustomerIdentity {
  const pan = `${card.bin}${card.last4}`;
  return {
    par: { par_value: chars(`par:${pan}`, ALPHANUMERIC, 29) },
    tokenprovider_a: { card_token: chars(`a:${pan}`, DIGITS, 16) },
    tokenprovider_b: { card_token: chars(`b:${pan}`, HEX, 64) },
  };
}

const DIGITS = '0123456789';
const HEX = '0123456789abcdef';
const ALPHANUMERIC = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** Deterministic pseudo-random characters: FNV-1a of the seed drives an xorshift. */
function chars(seed: string, alphabet: string, length: number): string {
  let state = 0x811c9dc5;
  for (let i = 0; i < seed.length; i++) state = Math.imul(state ^ seed.charCodeAt(i), 0x01000193);
  state ||= 1;
  let out = '';
  for (let i = 0; i < length; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    out += alphabet.charAt((state >>> 0) % alphabet.length);
  }
  return out;
}

/** A non-negative integer below 10^15 (so it prints as plain digits). */
function counter(value: number): number {
  return Number.isFinite(value) ? Math.abs(Math.trunc(value)) % 1e15 : 0;
}

const pad = (value: number, width: number) => String(value).padStart(width, '0');
const pad36 = (value: number, width: number) =>
  value.toString(36).toUpperCase().padStart(width, '0');

/** The object without its undefined members, so that absent fields stay absent. */
function defined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
