/**
 * The Transaction resource of both revisions. The service keeps one internal shape (the
 * current revision's, with millisecond timestamps); `renderTransaction` derives the
 * older revision from it.
 */
import { z } from 'zod';
import {
  Amount,
  Currency,
  Description,
  ExternalId,
  Metadata,
  PrintableAscii,
  ReceiptText,
  ResultCode,
  TerminalId,
  TransactionId,
  TimestampV0,
  TimestampV1,
  formatTimestamp,
  type Revision,
} from './fields.js';

export const TRANSACTION_STATES = [
  'PROCESSING',
  'AWAITING_CONTINUE',
  'AWAITING_CONFIRM',
  'CONFIRMED',
  'COMMITTED',
] as const;
export const TransactionState = z.enum(TRANSACTION_STATES);
export type TransactionState = z.infer<typeof TransactionState>;

export const TRANSACTION_TYPES = ['ACCOUNT_CHECK', 'PURCHASE', 'REFUND', 'UNKNOWN'] as const;
export const TransactionType = z.enum(TRANSACTION_TYPES);
export type TransactionType = z.infer<typeof TransactionType>;

export const CARD_SCHEMES = [
  'AMEX',
  'BANKAXEPT',
  'DANKORT',
  'DINERS_CLUB',
  'GIROCARD',
  'JCB',
  'MASTERCARD',
  'UNIONPAY',
  'VISA',
  'UNKNOWN',
] as const;
export const CARD_ENTRY_MODES = [
  'CONTACT_EMV',
  'CONTACTLESS_EMV',
  'MAGNETIC_STRIPE',
  'MANUAL',
] as const;
export const CARDHOLDER_VERIFICATIONS = [
  'NONE',
  'SIGNATURE',
  'PIN',
  'PIN_AND_SIGNATURE',
  'CONSUMER_DEVICE',
] as const;

/**
 * A card number as the relay stores and serves it: 13-19 digits and `*`, showing at most
 * the first 6 and the last 4 digits (PCI DSS), so everything between is `*`. The spec's
 * own pattern (13-19 of digits and `*`) would let a full number through.
 */
export const MaskedCardNumber = z
  .string()
  .regex(
    /^[0-9*]{6}\*{3,9}[0-9*]{4}$/,
    'must be 13-19 digits and *, showing at most the first 6 and last 4 digits',
  );

export function isMaskedCardNumber(value: string): boolean {
  return MaskedCardNumber.safeParse(value).success;
}

/**
 * A card number (digits, `*` for digits the sender already masked) as MaskedCardNumber
 * wants it: the first 6 and last 4 kept, every other digit `*`. Undefined when it is not
 * 13-19 characters of digits and `*`: such a value is not a card number to keep.
 */
export function maskCardNumber(pan: string): string | undefined {
  if (!/^[0-9*]{13,19}$/.test(pan)) return undefined;
  return `${pan.slice(0, 6)}${'*'.repeat(pan.length - 10)}${pan.slice(-4)}`;
}

/** The members that hold a card number. */
export const CARD_NUMBER_FIELDS = ['card_number_customer', 'card_number_merchant'] as const;

export const PaymentMethodDetails = z.object({
  payment_method: z.literal('CARD'),
  acquirer_reference: z
    .string()
    .regex(/^\d{12}$/)
    .optional(),
  acquirer_terminal_id: z
    .string()
    .regex(/^[0-9A-Z]{8}$/)
    .optional(),
  acquirer_timestamp: z
    .string()
    .regex(/^\d{12}$/)
    .optional(),
  application_identifier: z
    .string()
    .regex(/^[0-9A-F]{10,32}$/)
    .optional(),
  application_name: PrintableAscii(16).optional(),
  authorization_code: z
    .string()
    .regex(/^[0-9A-Z]{6}$/)
    .optional(),
  authorization_response_code: z
    .string()
    .regex(/^[0-9A-Z]{2}$/)
    .optional(),
  card_entry_mode: z.enum(CARD_ENTRY_MODES).optional(),
  card_number_customer: MaskedCardNumber.optional(),
  card_number_merchant: MaskedCardNumber.optional(),
  card_scheme: z.enum(CARD_SCHEMES).optional(),
  card_sequence_number: z
    .string()
    .regex(/^\d{2}$/)
    .optional(),
  cardholder_verification: z.enum(CARDHOLDER_VERIFICATIONS).optional(),
});
export type PaymentMethodDetails = z.infer<typeof PaymentMethodDetails>;

const CustomerIdentityV0 = z.object({
  par: z.object({ par_value: z.string().regex(/^[0-9A-Z]{29}$/) }).optional(),
  tokenprovider_a: z.object({ card_token: z.string().regex(/^\d{16}$/) }).optional(),
});
export const CustomerIdentity = CustomerIdentityV0.extend({
  tokenprovider_b: z.object({ card_token: z.string().regex(/^[0-9a-f]{64}$/) }).optional(),
});
export type CustomerIdentity = z.infer<typeof CustomerIdentity>;

const DccV0 = z.object({
  customer_amount: Amount.optional(),
  customer_currency: Currency.optional(),
  exchange_rate: z.number().int().min(0).optional(),
  exchange_rate_date: z
    .string()
    .min(1)
    .max(10)
    .regex(/^\d{4}-\d{2}-\d{2}$/)
    .optional(),
  exchange_rate_provider: PrintableAscii(63).optional(),
  markup_fee: z.number().int().min(0).max(10_000).optional(),
  provider: PrintableAscii(63).optional(),
});
export const Dcc = DccV0.extend({ exchange_rate_precise: z.number().int().min(0).optional() });
export type Dcc = z.infer<typeof Dcc>;

export const Reference = z.string().regex(/^[0-9-]{1,63}$/);

const transactionFields = (Timestamp: typeof TimestampV1) => ({
  created_at: Timestamp,
  external_id: ExternalId,
  id: TransactionId,
  state: TransactionState,
  terminal_id: TerminalId,
  type: TransactionType,
  updated_at: Timestamp,
  authorized_amount: Amount.optional(),
  captured_amount: Amount.optional(),
  cashback_amount: Amount.optional(),
  confirmed_at: Timestamp.optional(),
  currency: Currency.optional(),
  customer_not_present: z.boolean().optional(),
  metadata: Metadata.optional(),
  original_purchase_external_id: ExternalId.optional(),
  original_purchase_id: TransactionId.optional(),
  original_purchase_terminal_id: TerminalId.optional(),
  payment_method_details: PaymentMethodDetails.optional(),
  receipt_details_customer: ReceiptText.optional(),
  receipt_details_merchant: ReceiptText.optional(),
  reference: Reference.optional(),
  requested_amount: Amount.optional(),
  result_code: ResultCode.optional(),
  result_description: Description.optional(),
  surcharge_amount: Amount.optional(),
  tip_amount: Amount.optional(),
  total_amount: Amount.optional(),
  /**
   * An extension: the terminal's agent made this transaction in local mode and the relay
   * mirrors it (docs/local-mode.md). Absent on every transaction the relay made.
   */
  made_locally: z.literal(true).optional(),
});

export const TransactionV1 = z.object({
  ...transactionFields(TimestampV1),
  customer_identity: CustomerIdentity.optional(),
  dcc: Dcc.optional(),
  extra_amounts: z.object({ refundable_amount: Amount.optional() }).optional(),
});
export const TransactionV0 = z.object({
  ...transactionFields(TimestampV0),
  customer_identity: CustomerIdentityV0.optional(),
  dcc: DccV0.optional(),
  refundable_amount: Amount.optional(),
});
export const transactionSchema = (revision: Revision) =>
  revision === 'v1' ? TransactionV1 : TransactionV0;

/** The internal and current-revision shape. */
export type Transaction = z.infer<typeof TransactionV1>;
export type TransactionV0 = z.infer<typeof TransactionV0>;

/**
 * Renders the stored transaction for a revision: v0 drops milliseconds and the v1-only
 * members, and carries `refundable_amount` on the transaction itself.
 */
/**
 * The payment method details without a card number that shows more than the first 6 and
 * last 4 digits: the relay refuses to store one (cloud/terminals/card-data-guard.ts), and
 * never serves one a store may hold from before.
 */
export function withoutFullCardNumbers(txn: Transaction): Transaction {
  const details = txn.payment_method_details;
  if (!details || CARD_NUMBER_FIELDS.every((f) => !details[f] || isMaskedCardNumber(details[f]))) {
    return txn;
  }
  const kept = { ...details };
  for (const field of CARD_NUMBER_FIELDS) {
    if (kept[field] && !isMaskedCardNumber(kept[field])) delete kept[field];
  }
  return { ...txn, payment_method_details: kept };
}

export function renderTransaction(
  stored: Transaction,
  revision: Revision,
  refundableAmount?: number,
): Transaction | TransactionV0 {
  const txn = withoutFullCardNumbers(stored);
  if (revision === 'v1') {
    const { extra_amounts: _ignored, ...rest } = txn;
    return refundableAmount === undefined
      ? rest
      : { ...rest, extra_amounts: { refundable_amount: refundableAmount } };
  }
  const { extra_amounts: _extra, customer_identity, dcc, ...rest } = txn;
  const v0: TransactionV0 = {
    ...rest,
    created_at: formatTimestamp(txn.created_at, 'v0'),
    updated_at: formatTimestamp(txn.updated_at, 'v0'),
  };
  if (txn.confirmed_at) v0.confirmed_at = formatTimestamp(txn.confirmed_at, 'v0');
  if (customer_identity) {
    const { tokenprovider_b: _b, ...identity } = customer_identity;
    if (Object.keys(identity).length > 0) v0.customer_identity = identity;
  }
  if (dcc) {
    const { exchange_rate_precise: _p, ...olderDcc } = dcc;
    v0.dcc = olderDcc;
  }
  if (refundableAmount !== undefined) v0.refundable_amount = refundableAmount;
  return v0;
}
