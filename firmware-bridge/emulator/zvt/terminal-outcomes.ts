/**
 * What the emulated ZVT terminal says about a transaction: the outcome comes from the
 * native emulator's trigger table (emulator/scenarios.ts, the amounts of field-notes.md),
 * translated here into ZVT result codes, card-type IDs and the fields of a 04 0F.
 *
 * Result codes (zvt-notes §6.1). The notes publish no mapping; these are the codes whose
 * meaning is closest and that are stated by several sources [S]; 05 is the host decline
 * seen in PZ's capture (V20). A driver maps them back with `outcomeOfResultCode`.
 *
 * | scenario           | ZVT | meaning in the notes                          |
 * |--------------------|-----|-----------------------------------------------|
 * | SUCCESS            | 00  | no error                                      |
 * | PROCESSOR_REJECTED | 83  | function not possible                         |
 * | ABORTED            | 6C  | aborted (abort key / timeout / ECR abort)     |
 * | CARD_REMOVED       | 66  | processing error (also card-reader mechanics) |
 * | DECLINED_BY_ISSUER | 05  | host: declined                                |
 * | SYSTEM_ERROR       | FF  | system error                                  |
 * | NETWORK_ERROR      | 9B  | dial-up / communication fault                 |
 * | CARD_NOT_ACCEPTED  | C5  | payment method not supported                  |
 */
import type { EmulatorResultCode, Scenario } from '../scenarios.js';
import { scenarioFor } from '../scenarios.js';
import type { BmpValues, TotalsGroup } from '../../zvt/bmp-values.js';
import { constructed, primitive, type Tlv, type TlvContainer } from '../../zvt/tlv.js';

export const RESULT_CODES = {
  SUCCESS: 0x00,
  PROCESSOR_REJECTED: 0x83,
  ABORTED: 0x6c,
  CARD_REMOVED: 0x66,
  DECLINED_BY_ISSUER: 0x05,
  SYSTEM_ERROR: 0xff,
  NETWORK_ERROR: 0x9b,
  CARD_NOT_ACCEPTED: 0xc5,
} as const satisfies Record<EmulatorResultCode, number>;

/** The other codes the emulated terminal uses (§6.1). */
export const ZVT_CODES = {
  /** 84 6B 00: a payment command before registration. */
  notRegistered: 0x6b,
  /** 84 83 00: a wrong password, an unsupported command, busy. */
  functionNotPossible: 0x83,
  /** 84 9A 00: the command did not decode, or lacks a mandatory field. */
  protocolError: 0x9a,
  /** 06 1E B4: the payment was reversed already. */
  alreadyReversed: 0xb4,
  /** 06 1E B5: no payment of this receipt number in the open batch. */
  reversalNotPossible: 0xb5,
  /** 06 1E 6F: a currency the terminal does not know. */
  wrongCurrency: 0x6f,
  /** 06 1E A0: an end-of-day that could not reach the acquirer's host. */
  receiverNotReady: 0xa0,
  /** 06 1E F0: a payment while the batch is overdue for its end-of-day. */
  endOfDayRequired: 0xf0,
} as const;

/** Terminal status (05 01 completion) of a PT that needs an end-of-day first (zvt-notes §6.3). */
export const TERMINAL_STATUS_END_OF_DAY_REQUIRED = 0xf0;

/** A ZVT result code back to the scenario's code (undefined for codes the emulator never uses). */
export function outcomeOfResultCode(code: number): EmulatorResultCode | undefined {
  return (Object.entries(RESULT_CODES) as [EmulatorResultCode, number][]).find(
    ([, value]) => value === code,
  )?.[0];
}

/** ISO 4217 numeric → alphabetic, for the currencies the emulator accepts. */
export const CURRENCIES: ReadonlyMap<number, string> = new Map([
  [978, 'EUR'],
  [840, 'USD'],
  [826, 'GBP'],
  [756, 'CHF'],
  [752, 'SEK'],
  [208, 'DKK'],
  [578, 'NOK'],
  [985, 'PLN'],
  [203, 'CZK'],
  [348, 'HUF'],
]);

/** ZVT card-type IDs (BMP 8A, §6.6) of the schemes scenarios.ts reads. */
const CARD_TYPES: Readonly<Record<string, number>> = {
  GIROCARD: 0x05,
  MASTERCARD: 0x06,
  AMEX: 0x08,
  VISA: 0x0a,
  DINERS: 0x0c,
  JCB: 0x0e,
  MAESTRO: 0x2e,
};

/** The BMP 60 totals group of a scheme (§5.6). */
export function totalsGroupOf(scheme: string | undefined): TotalsGroup {
  switch (scheme) {
    case 'GIROCARD':
      return 'girocard';
    case 'JCB':
      return 'jcb';
    case 'MASTERCARD':
      return 'eurocard';
    case 'AMEX':
      return 'amex';
    case 'VISA':
      return 'visa';
    case 'DINERS':
      return 'diners';
    default:
      return 'others';
  }
}

export interface TransactionFacts {
  kind: 'PURCHASE' | 'REFUND';
  amount: number;
  currency: string;
  /** Per-terminal transaction counter. */
  sequence: number;
  terminalSerial: number;
  now: Date;
}

/** The scenario the trigger table picks, as the native emulator plays it. */
export function scenarioOf(facts: TransactionFacts): Scenario {
  return scenarioFor(
    {
      kind: facts.kind,
      requested_amount: facts.amount,
      currency: facts.currency,
      pause_on_customer_identified: false,
    },
    { terminalSerial: facts.terminalSerial, sequence: facts.sequence, now: facts.now },
  );
}

export interface Identifiers {
  receiptNumber: number;
  traceNumber: number;
  terminalId: string;
  currency: number;
  now: Date;
}

/** `HHMMSS` and `MMDD` of a time, UTC. */
export function timeAndDate(now: Date): { time: string; date: string } {
  const iso = now.toISOString();
  return {
    time: iso.slice(11, 19).replaceAll(':', ''),
    date: `${iso.slice(5, 7)}${iso.slice(8, 10)}`,
  };
}

/** TLV 1F12 card technology of an entry mode (zvt-notes §4). */
const CARD_TECHNOLOGY: Readonly<Record<string, number>> = {
  MAGNETIC_STRIPE: 0x00,
  CONTACT_EMV: 0x01,
  CONTACTLESS_EMV: 0x02,
};
/** TLV 1F10 cardholder authentication of a verification. */
const CARDHOLDER_AUTHENTICATION: Readonly<Record<string, number>> = {
  NONE: 0x00,
  SIGNATURE: 0x01,
  PIN: 0x02,
  PIN_AND_SIGNATURE: 0x07,
};

/**
 * The TLV container of a 04 0F when the ECR activated TLV output: payment type container
 * 2F {1F12 card technology, 1F10 cardholder authentication} and application 60 {43 AID}.
 */
function cardTlv(scenario: Scenario): TlvContainer | undefined {
  const card = scenario.details.payment_method_details;
  if (!card) return undefined;
  const payment: Tlv[] = [];
  const technology = card.card_entry_mode && CARD_TECHNOLOGY[card.card_entry_mode];
  if (technology !== undefined) payment.push(primitive(0x1f12, Buffer.from([technology])));
  const cvm =
    card.cardholder_verification && CARDHOLDER_AUTHENTICATION[card.cardholder_verification];
  if (cvm !== undefined) payment.push(primitive(0x1f10, Buffer.from([cvm])));
  const items: Tlv[] = payment.length > 0 ? [constructed(0x2f, payment)] : [];
  const aid = card.application_identifier;
  if (aid && /^(?:[0-9A-F]{2})+$/.test(aid)) {
    items.push(constructed(0x60, [primitive(0x43, Buffer.from(aid, 'hex'))]));
  }
  return items.length > 0 ? { items } : undefined;
}

/**
 * The 04 0F of a payment or refund: result, amounts and identifiers, and the card fields
 * when a card was read; with `tlv` (the ECR activated TLV output) also entry mode,
 * cardholder verification and AID. Fields the notes mark uncertain (3B, 2A, 88) are left
 * out.
 */
export function statusInformationOf(
  scenario: Scenario,
  requested: number,
  ids: Identifiers,
  options: { tlv?: boolean } = {},
): BmpValues {
  const tlv = options.tlv ? cardTlv(scenario) : undefined;
  const card = scenario.details.payment_method_details;
  const approved = scenario.result_code === 'SUCCESS';
  const pan = card?.card_number_merchant;
  const cardType = card?.card_scheme === undefined ? undefined : CARD_TYPES[card.card_scheme];
  return {
    resultCode: RESULT_CODES[scenario.result_code],
    amount: approved ? (scenario.details.total_amount ?? requested) : requested,
    currency: ids.currency,
    ...timeAndDate(ids.now),
    ...(card && approved
      ? { paymentType: card.cardholder_verification === 'PIN' ? 0x70 : 0x60 }
      : {}),
    ...(pan && /^[0-9*]+$/.test(pan) ? { pan } : {}),
    traceNumber: ids.traceNumber,
    receiptNumber: ids.receiptNumber,
    terminalId: ids.terminalId,
    ...(cardType === undefined ? {} : { cardType }),
    ...(card?.application_name ? { cardName: card.application_name } : {}),
    ...(tlv ? { tlv } : {}),
  };
}

/** The receipts of a scenario: merchant copy, then customer copy, as lines. */
export function receiptsOf(scenario: Scenario): string[][] {
  const lines = (text: string | undefined) => (text ?? '').split('\n').slice(0, -1);
  return [
    lines(scenario.details.receipt_details_merchant),
    lines(scenario.details.receipt_details_customer),
  ].filter((receipt) => receipt.length > 0);
}

const WIDTH = 32;
const row = (label: string, value: string) =>
  label.length + 1 + value.length <= WIDTH
    ? label + value.padStart(WIDTH - label.length)
    : `${label} ${value}`.slice(0, WIDTH);
const center = (text: string) => text.padStart(Math.floor((WIDTH + text.length) / 2));

/** The receipt of a reversal. */
export function reversalReceipt(amount: string, original: number, ids: Identifiers): string[] {
  const { time, date } = timeAndDate(ids.now);
  return [
    center('REVERSAL'),
    row('DATE', `${date.slice(2)}.${date.slice(0, 2)} ${time.slice(0, 2)}:${time.slice(2, 4)}`),
    row('TERMINAL', ids.terminalId),
    row('RECEIPT', String(ids.receiptNumber).padStart(4, '0')),
    row('TRACE', String(ids.traceNumber).padStart(6, '0')),
    row('ORIGINAL RECEIPT', String(original).padStart(4, '0')),
    row('AMOUNT', amount),
    '',
    center('REVERSED'),
  ];
}

/** The administration receipt of an end-of-day. */
export function endOfDayReceipt(
  groups: readonly { name: string; count: number; total: string }[],
  total: string,
  ids: Identifiers,
): string[] {
  const { time, date } = timeAndDate(ids.now);
  return [
    center('END OF DAY'),
    row('DATE', `${date.slice(2)}.${date.slice(0, 2)} ${time.slice(0, 2)}:${time.slice(2, 4)}`),
    row('TERMINAL', ids.terminalId),
    row('TRACE', String(ids.traceNumber).padStart(6, '0')),
    ...groups.map((group) => row(`${group.name} ${group.count}`, group.total)),
    row('TOTAL', total),
    '',
    center('BATCH CLOSED'),
  ];
}
