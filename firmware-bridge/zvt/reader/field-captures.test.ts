/**
 * The driver's mappings replayed on bytes real terminals sent (zvt/testing/field-captures.ts
 * names each source and terminal): display texts, receipts of 40-column terminals,
 * character sets, and card numbers sent in clear.
 */
import { describe, expect, it } from 'vitest';
import { ReceiptText } from '../../../protocol/fields.js';
import { MaskedCardNumber } from '../../../protocol/transaction.js';
import { ScreenText } from '../../serial/messages.js';
import { readBmps } from '../bmp-values.js';
import type {
  IntermediateStatus,
  PrintLine,
  PrintTextBlock,
  StatusInformation,
} from '../message-types.js';
import { decodeMessageBytes } from '../messages.js';
import {
  CARDCOMPLETE_CLOSURE_RECEIPT,
  CARDCOMPLETE_DISPLAY_ANNOUNCED,
  CARDCOMPLETE_PRINT_LINE_ANNOUNCED,
  FEIG_CUSTOMER_RECEIPT,
  FEIG_GIROCARD_CLEAR_PAN,
  FEIG_GIROCARD_PAN,
  HOBEX_CUSTOMER_RECEIPT,
  VALINA_DISPLAY_TWO_LINES,
} from '../testing/field-captures.js';
import { withCharset, ZVT_PROFILES } from './profiles.js';
import { screenTextOf } from './reader-commands.js';
import { receiptsOf, RECEIPT_LINES, RECEIPT_WIDTH } from './receipt-text.js';
import { detailsOf } from './result-details.js';

function decoded<T>(bytes: Buffer): T {
  const message = decodeMessageBytes(bytes);
  if (!message.ok) throw new Error(message.error.message);
  return message.value as T;
}

const block = (bytes: Buffer) => decoded<PrintTextBlock>(bytes);

describe('ZVT field captures: display texts', () => {
  it('joins two display lines of a Worldline VALINA (one 07 with a line feed) with " / "', () => {
    const status = decoded<IntermediateStatus>(VALINA_DISPLAY_TWO_LINES);
    const text = screenTextOf(status, ZVT_PROFILES.generic);
    expect(text).toBe('Karte vorhalten / einstecken/durchziehen');
    expect(ScreenText.safeParse(text).success).toBe(true);
  });
});

describe('ZVT field captures: receipts of a 40-column Feig terminal', () => {
  const receipt = receiptsOf([], [block(FEIG_CUSTOMER_RECEIPT)], 'cp437').customer ?? '';
  const lines = receipt.split('\n').slice(0, -1);

  it('fits label and value on one line of 32, and keeps amounts, outcome and references', () => {
    expect(ReceiptText.safeParse(receipt).success).toBe(true);
    expect(lines.length).toBeLessThanOrEqual(RECEIPT_LINES);
    expect(lines.every((line) => line.length <= RECEIPT_WIDTH)).toBe(true);
    expect(lines).toContain('Terminal-Id:            52523535');
    expect(lines).toContain('Receipt No:                 0232');
    expect(lines).toContain('Maximum amount:        EUR 25,00');
    expect(lines).toContain('Decreed amount:         EUR 0,00');
    expect(lines).toContain('         Cancellation approved');
    expect(lines).toContain('Card No.:       xxxxxxxxxxxx8074');
    // Nothing wraps (a continuation starts with one space) and nothing is cut.
    expect(lines.filter((line) => /^ \S/.test(line))).toEqual([]);
    expect(receipt).not.toContain('more lines on terminal');
  });

  it('cuts a receipt still too long by dropping lines without amount, outcome or reference', () => {
    // The same receipt twice over (a terminal printing both copies in one block).
    const twice = block(FEIG_CUSTOMER_RECEIPT);
    const long = receiptsOf([], [twice, twice], 'cp437').customer ?? '';
    const cut = long.split('\n').slice(0, -1);
    expect(cut).toHaveLength(RECEIPT_LINES);
    expect(cut.at(-1)).toMatch(/^\(\d+ more lines on terminal\)$/);
    expect(cut.filter((line) => line.includes('Cancellation approved'))).toHaveLength(2);
    expect(cut.filter((line) => line.includes('EUR 25,00'))).toHaveLength(2);
    expect(cut.filter((line) => line.includes('Receipt No:'))).toHaveLength(2);
  });
});

describe('ZVT field captures: character sets', () => {
  it('reads a hobex receipt (CP437, nothing announced) under the generic profile', () => {
    const text = receiptsOf([], [block(HOBEX_CUSTOMER_RECEIPT)], 'cp437').customer ?? '';
    expect(text).toContain('fuer PORTALUM GmbH');
  });

  it('honours a CardComplete receipt announcing ISO 8859-2 (TLV 14 02), whatever the profile', () => {
    for (const charset of ['cp437', 'iso-8859-1'] as const) {
      const text = receiptsOf([], [block(CARDCOMPLETE_CLOSURE_RECEIPT)], charset).merchant ?? '';
      expect(text).toContain('HAeNDLERBELEG');
      expect(text).toContain('Gesamt:       4             4.12\n');
      expect(text).toContain('--------------------------------\n');
      expect(text).toContain('-----------HOSTSUMMEN-----------\n');
      expect(text).toContain('HAeNDLER-ID:          7310000008\n');
    }
  });

  it('takes the charset for unannounced text from the profile, overridable and zod-checked', () => {
    const cardcomplete = ZVT_PROFILES.cardcomplete;
    const misread = receiptsOf([], [block(HOBEX_CUSTOMER_RECEIPT)], cardcomplete.charset);
    expect(misread.customer).not.toContain('fuer PORTALUM');
    const overridden = withCharset(cardcomplete, 'cp437');
    expect(overridden.charset).toBe('cp437');
    const read = receiptsOf([], [block(HOBEX_CUSTOMER_RECEIPT)], overridden.charset);
    expect(read.customer).toContain('fuer PORTALUM GmbH');
    expect(withCharset(cardcomplete, undefined)).toBe(cardcomplete);
    expect(() => withCharset(cardcomplete, 'latin9')).toThrow(/Invalid option/);
  });
});

describe('ZVT field captures: character set announced beside print lines and display texts', () => {
  it('reads a 06 D1 in the set its trailing TLV 14 announces', () => {
    const line = decoded<PrintLine>(CARDCOMPLETE_PRINT_LINE_ANNOUNCED);
    expect(receiptsOf([line], [], 'cp437').customer).toBe('Ueberpruefung auf\n');
  });

  it('reads a 04 FF display text in the set a TLV 14 beside it announces', () => {
    const status = decoded<IntermediateStatus>(CARDCOMPLETE_DISPLAY_ANNOUNCED);
    expect(screenTextOf(status, ZVT_PROFILES.generic)).toBe('Ueberpruefung auf');
  });
});

describe('ZVT field captures: card numbers', () => {
  it('keeps the girocard number a Feig sends in clear, masked to its first 6 and last 4', () => {
    const info = decoded<StatusInformation>(FEIG_GIROCARD_CLEAR_PAN);
    const values = readBmps(info.bmps);
    expect(values.pan).toBe(FEIG_GIROCARD_PAN);
    const details = detailsOf(values, info.bmps, {
      approved: true,
      requested: 2500,
      now: new Date('2023-04-21T12:00:00Z'),
    });
    const method = details.payment_method_details;
    expect(method?.card_number_customer).toBe('471100*********8004');
    expect(method?.card_number_merchant).toBe('471100*********8004');
    expect(MaskedCardNumber.safeParse(method?.card_number_customer).success).toBe(true);
    expect(JSON.stringify(details)).not.toContain(FEIG_GIROCARD_PAN);
    expect(method?.card_scheme).toBe('GIROCARD');
  });
});
