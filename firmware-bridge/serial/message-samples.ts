/**
 * One valid example of every serial message, for tests, the emulator and bench tools.
 * `largestResult` fills every field of a result to its limit: it must fit one frame.
 */
import type { HostMessage, ReaderMessage } from './messages.js';

const receipt = (mark: string) => `${mark.repeat(32)}\n`.repeat(31);

const fullDetails = {
  authorized_amount: 999_999_999_999,
  total_amount: 999_999_999_999,
  tip_amount: 999_999_999_999,
  surcharge_amount: 999_999_999_999,
  cashback_amount: 999_999_999_999,
  payment_method_details: {
    payment_method: 'CARD' as const,
    acquirer_reference: '123456789012',
    acquirer_terminal_id: 'ABCD1234',
    acquirer_timestamp: '250101120000',
    application_identifier: 'A0000000041010A0000000041010ABCD',
    application_name: 'MASTERCARD DEBIT',
    authorization_code: 'A1B2C3',
    authorization_response_code: '00',
    card_entry_mode: 'CONTACTLESS_EMV' as const,
    card_number_customer: '***************1234',
    card_number_merchant: '541333*******2345',
    card_scheme: 'MASTERCARD' as const,
    card_sequence_number: '01',
    cardholder_verification: 'PIN_AND_SIGNATURE' as const,
  },
  receipt_details_customer: receipt('"'),
  receipt_details_merchant: receipt('\\'),
  reference: '1'.repeat(63),
  dcc: {
    customer_amount: 999_999_999_999,
    customer_currency: 'USD',
    exchange_rate: 999_999_999_999,
    exchange_rate_precise: 999_999_999_999,
    exchange_rate_date: '2025-01-01',
    exchange_rate_provider: 'P'.repeat(63),
    markup_fee: 10_000,
    provider: 'Q'.repeat(63),
  },
  customer_identity: {
    par: { par_value: 'Q'.repeat(29) },
    tokenprovider_a: { card_token: '4'.repeat(16) },
    tokenprovider_b: { card_token: 'f'.repeat(64) },
  },
};

export const hostSamples: HostMessage[] = [
  {
    v: 1,
    type: 'transaction.start',
    transaction_id: 'tx-0001',
    kind: 'PURCHASE',
    requested_amount: 1250,
    currency: 'EUR',
    cashback_amount: 2000,
    pause_on_customer_identified: true,
    customer_not_present: false,
  },
  {
    v: 1,
    type: 'transaction.start',
    transaction_id: 'tx-0002',
    kind: 'REFUND',
    requested_amount: 500,
    currency: 'NOK',
    pause_on_customer_identified: false,
    original_reference: '0042-17',
  },
  {
    v: 1,
    type: 'transaction.start',
    transaction_id: 'tx-0003',
    kind: 'ACCOUNT_CHECK',
    requested_amount: 0,
    currency: 'SEK',
    pause_on_customer_identified: true,
    customer_not_present: true,
  },
  { v: 1, type: 'transaction.continue', transaction_id: 'tx-0001', requested_amount: 1100 },
  { v: 1, type: 'transaction.continue', transaction_id: 'tx-0003' },
  { v: 1, type: 'transaction.cancel', transaction_id: 'tx-0001' },
  { v: 1, type: 'transaction.reverse', transaction_id: 'tx-0001' },
  { v: 1, type: 'last_transaction.query' },
  { v: 1, type: 'last_transaction.query', query_id: '5f3a9c1e-7' },
  { v: 1, type: 'status.query' },
  { v: 1, type: 'status.query', query_id: '5f3a9c1e-8' },
];

export const largestResult: ReaderMessage = {
  v: 1,
  type: 'transaction.result',
  transaction_id: 'T'.repeat(63),
  phase: 'COMPLETED',
  result_code: 'R'.repeat(255),
  result_description: '"'.repeat(255),
  details: fullDetails,
};

export const readerSamples: ReaderMessage[] = [
  {
    v: 1,
    type: 'transaction.progress',
    transaction_id: 'tx-0001',
    screen_text: 'Insert, tap or swipe card — €12,50',
  },
  {
    v: 1,
    type: 'transaction.customer_identified',
    transaction_id: 'tx-0001',
    customer_identity: { par: { par_value: 'V0010013018263727284952701234' } },
  },
  {
    v: 1,
    type: 'transaction.result',
    transaction_id: 'tx-0001',
    phase: 'COMPLETED',
    result_code: 'SUCCESS',
    details: {
      authorized_amount: 1100,
      total_amount: 1100,
      payment_method_details: { payment_method: 'CARD', card_scheme: 'VISA' },
      reference: '0042-18',
    },
  },
  {
    v: 1,
    type: 'transaction.result',
    transaction_id: 'tx-0002',
    phase: 'CANCELLED',
    result_code: 'CANCELLED_BY_CUSTOMER',
    result_description: 'Cancelled on the terminal',
  },
  largestResult,
  { v: 1, type: 'last_transaction.answer', transaction: null },
  { v: 1, type: 'last_transaction.answer', query_id: '5f3a9c1e-7', transaction: null },
  {
    v: 1,
    type: 'last_transaction.answer',
    transaction: { transaction_id: 'tx-0001', phase: 'IN_PROGRESS' },
  },
  {
    v: 1,
    type: 'last_transaction.answer',
    transaction: {
      transaction_id: 'tx-0001',
      phase: 'COMPLETED',
      result_code: 'SUCCESS',
      details: { authorized_amount: 1100 },
    },
  },
  {
    v: 1,
    type: 'status.report',
    battery_percentage: 87,
    battery_charging: true,
    plugged_in: true,
    screen_message: 'Ready',
  },
  { v: 1, type: 'status.report' },
  { v: 1, type: 'status.report', query_id: '5f3a9c1e-8', plugged_in: true },
];
