import { describe, expect, it } from 'vitest';
import { Settlement } from '../../../protocol/settlement.js';
import { readBmps } from '../bmp-values.js';
import { decodeMessageBytes } from '../messages.js';
import type { PrintLine, StatusInformation } from '../message-types.js';
import type { ZvtOutcome } from '../session.js';
import { APDU_VECTORS } from '../testing/vectors.js';
import { settlementOf } from './settlement.js';

const NOW = { started_at: '2026-04-06T08:17:00.000Z', finished_at: '2026-04-06T08:17:06.000Z' };
const asReported = (fields: object) =>
  Settlement.parse({ trigger: 'SCHEDULE', attempt: 1, ...NOW, ...fields });

function outcomeWith(info: StatusInformation, lines: string[] = []): ZvtOutcome {
  return {
    command: 'end-of-day',
    kind: 'completed',
    result: readBmps(info.bmps),
    statusInformation: [info],
    printLines: lines.map((text, i): PrintLine => ({
      type: 'print-line',
      attribute: i === lines.length - 1 ? 0x81 : 0,
      text,
    })),
    printTextBlocks: [],
  };
}

describe('a ZVT end-of-day as a settlement', () => {
  it("reads a real terminal's totals (V30): 2 Mastercard payments, 9.58, receipts 233-234", () => {
    const vector = APDU_VECTORS.find((v) => v.id === 'V30')!;
    const decoded = decodeMessageBytes(vector.bytes, { command: 'end-of-day' });
    if (!decoded.ok || decoded.value.type !== 'status-information') throw new Error('V30');
    const settlement = settlementOf(
      outcomeWith(decoded.value, ['   END OF DAY', 'TOTAL     9,58 €']),
      'cp437',
      'EUR',
    );
    expect(settlement).toEqual({
      status: 'SUCCESS',
      total_amount: 958,
      currency: 'EUR',
      trace_number: 982,
      first_receipt_number: 233,
      last_receipt_number: 234,
      totals: [{ card_group: 'MASTERCARD', count: 2, amount: 958 }],
      receipt_text: '   END OF DAY\nTOTAL     9,58 EUR\n',
    });
    expect(() => asReported(settlement)).not.toThrow();
  });

  it('leaves out a BMP 60 without the layout of the notes, and reports a refusal with its code', () => {
    const info: StatusInformation = {
      type: 'status-information',
      bmps: [
        { tag: 0x27, format: 'byte', value: 0 },
        { tag: 0x60, format: 'binary', value: Buffer.from([1, 2, 3]) },
      ],
    };
    expect(settlementOf(outcomeWith(info), 'cp437', 'EUR')).toEqual({ status: 'SUCCESS' });
    const refused: ZvtOutcome = {
      ...outcomeWith(info),
      kind: 'aborted',
      resultCode: 0xa0,
      result: {},
    };
    expect(settlementOf(refused, 'cp437', 'EUR')).toMatchObject({
      status: 'FAILED',
      result_code: 'NETWORK_ERROR',
      result_description: 'ZVT A0: receiver not ready',
    });
  });
});
