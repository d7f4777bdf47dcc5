/**
 * The driver's mappings from what a PT sends to what the agent reports, on hostile input
 * (property tests, fixed seed): whatever the fields, the texts and the codes, the result
 * is one the agent's schemas accept, and receipts stay within the spec's limits.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Description, ResultCode } from '../../../protocol/fields.js';
import { ReceiptText } from '../../../protocol/fields.js';
import { TransactionResultDetails } from '../../../protocol/terminal-link.js';
import { ScreenText } from '../../serial/messages.js';
import { bmpsFrom, readBmps } from '../bmp-values.js';
import type { ZvtOutcome } from '../session.js';
import type { ZvtDriverRecord } from './driver-state.js';
import { ZVT_PROFILES } from './profiles.js';
import { recordFromRepeatReceipt } from './transaction-outcome.js';
import { encodeCp437 } from '../encodings.js';
import type { PrintLine } from '../message-types.js';
import { primitive } from '../tlv.js';
import { bmpList, PROPERTY } from '../testing/arbitraries.js';
import { asciiLine, receiptsOf, receiptText, wrapLine } from './receipt-text.js';
import { acquirerTimestamp, CARD_TYPE_SCHEMES, detailsOf } from './result-details.js';
import { intermediateStatusText, refusalOfCode, resultOfCode } from './result-codes.js';

const anyText = fc.string({ unit: 'binary', maxLength: 120 });
const printLine: fc.Arbitrary<PrintLine> = fc.record({
  type: fc.constant('print-line' as const),
  attribute: fc.integer({ min: 0, max: 255 }),
  text: anyText,
});

describe('ZVT result codes', () => {
  it('maps every byte to a valid result code and description (property)', () => {
    for (let code = 0; code <= 0xff; code++) {
      for (const mapped of [resultOfCode(code), refusalOfCode(code)]) {
        expect(ResultCode.safeParse(mapped.result_code).success).toBe(true);
        expect(Description.safeParse(mapped.result_description).success).toBe(true);
      }
      expect(ScreenText.safeParse(intermediateStatusText(code)).success).toBe(true);
    }
  });

  it('maps the codes of the trigger amounts back to the native reader codes', () => {
    expect(resultOfCode(0x00).result_code).toBe('SUCCESS');
    expect(resultOfCode(0x05).result_code).toBe('DECLINED_BY_ISSUER');
    expect(resultOfCode(0x66).result_code).toBe('CARD_REMOVED');
    expect(resultOfCode(0x6c).result_code).toBe('ABORTED');
    expect(resultOfCode(0x83).result_code).toBe('PROCESSOR_REJECTED');
    expect(resultOfCode(0x9b).result_code).toBe('NETWORK_ERROR');
    expect(resultOfCode(0xc5).result_code).toBe('CARD_NOT_ACCEPTED');
    expect(resultOfCode(0xff).result_code).toBe('SYSTEM_ERROR');
    expect(resultOfCode(0x51).result_code).toBe('INSUFFICIENT_FUNDS');
    expect(refusalOfCode(0x83).result_code).toBe('READER_BUSY');
  });
});

describe('ZVT receipts', () => {
  it('keeps every receipt within 31 lines of 32 printable ASCII characters (property)', () => {
    fc.assert(
      fc.property(fc.array(printLine, { maxLength: 80 }), (lines) => {
        const receipts = receiptsOf(lines, [], 'cp437');
        for (const text of [receipts.customer, receipts.merchant]) {
          if (text !== undefined) expect(ReceiptText.safeParse(text).success).toBe(true);
        }
      }),
      PROPERTY,
    );
  });

  it('spells out German letters, maps € and drops accents; the rest becomes ?', () => {
    expect(asciiLine('Grüße für 5 €  ')).toBe('Gruesse fuer 5 EUR');
    expect(asciiLine('Café Ōsaka ☃')).toBe('Cafe Osaka ?');
  });

  it('wraps a long line at a space with a one-space indent, and cuts a long word', () => {
    expect(wrapLine('AMOUNT TO PAY IN EUROS AFTER THE DISCOUNT 12,00')).toEqual([
      'AMOUNT TO PAY IN EUROS AFTER THE',
      ' DISCOUNT 12,00',
    ]);
    expect(wrapLine('X'.repeat(40))).toEqual(['X'.repeat(32), ` ${'X'.repeat(8)}`]);
  });

  it('cuts a receipt longer than 31 lines with a marker saying how much is left out', () => {
    const text = receiptText(Array.from({ length: 40 }, (_, i) => `LINE ${i}`)) as string;
    const lines = text.split('\n').slice(0, -1);
    expect(lines).toHaveLength(31);
    expect(lines.at(-1)).toBe('(10 more lines on terminal)');
  });

  it('splits print lines at the last-line attribute: merchant copy, then customer copy', () => {
    const line = (text: string, attribute = 0): PrintLine => ({
      type: 'print-line',
      attribute,
      text,
    });
    const receipts = receiptsOf(
      [line('MERCHANT'), line('COPY', 0x81), line('CUSTOMER'), line('COPY', 0x81)],
      [],
      'cp437',
    );
    expect(receipts).toEqual({ merchant: 'MERCHANT\nCOPY\n', customer: 'CUSTOMER\nCOPY\n' });
  });

  it('reads ISO 8859 text for a profile that says so', () => {
    // "ä" is E4 in ISO 8859-1; the codec read E4 as CP437 "Σ".
    const asDecoded = String.fromCharCode(0x3a3);
    expect(encodeCp437(asDecoded)).toEqual(Buffer.from([0xe4]));
    const receipts = receiptsOf(
      [{ type: 'print-line', attribute: 0x81, text: asDecoded }],
      [],
      'iso-8859-1',
    );
    expect(receipts.customer).toBe('ae\n');
  });
});

describe('ZVT status information to Transaction fields', () => {
  it('reports only valid fields, whatever the 04 0F holds (property)', () => {
    fc.assert(
      fc.property(
        bmpList(12),
        fc.boolean(),
        fc.integer({ min: 0, max: 10_000_000 }),
        (bmps, approved, requested) => {
          const details = detailsOf(readBmps(bmps), bmps, { approved, requested, now: new Date() });
          expect(TransactionResultDetails.safeParse(details).success).toBe(true);
        },
      ),
      PROPERTY,
    );
  });

  it('maps the fields of a real capture (V24: contactless Debit Mastercard)', () => {
    const bmps = [
      { tag: 0x27, format: 'byte' as const, value: 0 },
      { tag: 0x04, format: 'bcd' as const, value: '000000002500' },
      { tag: 0x0c, format: 'bcd' as const, value: '231355' },
      { tag: 0x0d, format: 'bcd' as const, value: '1029' },
      { tag: 0x22, format: 'bcd' as const, value: 'EEEEEEEEEEEE4771' },
      { tag: 0x29, format: 'bcd' as const, value: '52523535' },
      { tag: 0x87, format: 'bcd' as const, value: '0008' },
      { tag: 0x0b, format: 'bcd' as const, value: '000975' },
      { tag: 0x3b, format: 'ascii' as const, value: '750071\0\0' },
      { tag: 0x17, format: 'bcd' as const, value: '0001' },
      { tag: 0x8a, format: 'byte' as const, value: 0x2e },
      {
        tag: 0x06,
        format: 'tlv' as const,
        value: {
          items: [
            primitive(0x1f12, Buffer.from([0x02])),
            primitive(0x1f10, Buffer.from([0x00])),
            primitive(0x43, Buffer.from('A0000000041010', 'hex')),
          ],
        },
      },
    ];
    const details = detailsOf(readBmps(bmps), bmps, {
      approved: true,
      requested: 2500,
      now: new Date('2023-11-01T00:00:00Z'),
    });
    expect(details).toMatchObject({
      authorized_amount: 2500,
      total_amount: 2500,
      reference: '52523535-0008-000975',
      payment_method_details: {
        card_scheme: 'MASTERCARD',
        authorization_code: '750071',
        application_identifier: 'A0000000041010',
        card_entry_mode: 'CONTACTLESS_EMV',
        cardholder_verification: 'NONE',
        card_sequence_number: '01',
        acquirer_terminal_id: '52523535',
        acquirer_timestamp: '231029231355',
      },
    });
    expect(details.payment_method_details?.card_number_merchant).toBe('************4771');
  });

  it('takes the year before for a date ahead of the clock (read just after New Year)', () => {
    expect(acquirerTimestamp('1231', '235959', new Date('2026-01-01T00:00:10Z'))).toBe(
      '251231235959',
    );
    expect(acquirerTimestamp('1399', '000000', new Date())).toBeUndefined();
  });

  it('maps the ZVT card types the notes list to schemes', () => {
    expect(CARD_TYPE_SCHEMES.get(0x05)).toBe('GIROCARD');
    expect(CARD_TYPE_SCHEMES.get(0x06)).toBe('MASTERCARD');
    expect(CARD_TYPE_SCHEMES.get(0x0a)).toBe('VISA');
  });
});

describe('ZVT recovery from a Repeat Receipt', () => {
  const record: ZvtDriverRecord = {
    transaction_id: 'tx-recover',
    kind: 'PURCHASE',
    amount: 700,
    currency: 'EUR',
    phase: 'IN_PROGRESS',
  };
  const info = (values: { resultCode?: number; amount: number; traceNumber: number }) =>
    ({
      command: 'repeat-receipt',
      kind: 'completed',
      result: values,
      statusInformation: [{ type: 'status-information', bmps: bmpsFrom(values) }],
      printLines: [],
      printTextBlocks: [],
    }) as ZvtOutcome;
  const now = new Date();
  const generic = ZVT_PROFILES.generic;

  it('takes the last 04 0F as this one when the trace moved on, else says it never ran', () => {
    const last = info({ resultCode: 0, amount: 700, traceNumber: 8 });
    expect(
      recordFromRepeatReceipt({ ...record, trace_before: 7 }, last, generic, now),
    ).toMatchObject({
      phase: 'COMPLETED',
      result_code: 'SUCCESS',
      trace_number: 8,
    });
    expect(
      recordFromRepeatReceipt({ ...record, trace_before: 8 }, last, generic, now),
    ).toMatchObject({
      phase: 'CANCELLED',
      result_code: 'ABORTED',
    });
  });

  it('without a known trace, goes by the amount', () => {
    const other = info({ resultCode: 0, amount: 1200, traceNumber: 8 });
    expect(recordFromRepeatReceipt(record, other, generic, now).phase).toBe('CANCELLED');
    const same = info({ resultCode: 5, amount: 700, traceNumber: 8 });
    expect(recordFromRepeatReceipt(record, same, generic, now)).toMatchObject({
      result_code: 'DECLINED_BY_ISSUER',
    });
  });

  it('never guesses: no 04 0F, or one without a result code, is OUTCOME_UNKNOWN', () => {
    const silent = {
      ...info({ amount: 0, traceNumber: 0 }),
      statusInformation: [],
      result: undefined,
    };
    expect(
      recordFromRepeatReceipt({ ...record, trace_before: 7 }, silent, generic, now),
    ).toMatchObject({
      phase: 'COMPLETED',
      result_code: 'OUTCOME_UNKNOWN',
    });
    expect(
      recordFromRepeatReceipt({ ...record, trace_before: 0 }, silent, generic, now).phase,
    ).toBe('CANCELLED');
    const noCode = info({ amount: 700, traceNumber: 9 });
    expect(
      recordFromRepeatReceipt({ ...record, trace_before: 7 }, noCode, generic, now).result_code,
    ).toBe('OUTCOME_UNKNOWN');
  });
});
