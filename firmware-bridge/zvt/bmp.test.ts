import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fromHex, hexBytes } from './apdu.js';
import { decodeBmps, encodeBmp, encodeBmps } from './bmp.js';
import {
  bmpsFrom,
  readBmps,
  readTotals,
  totalsBytes,
  type IndividualTotals,
} from './bmp-values.js';
import { PROPERTY, bmpList, bytes } from './testing/arbitraries.js';

describe('BMP fields', () => {
  it('reads fixed, LL, LLL and TLV fields as typed values (V23)', () => {
    const data = fromHex(
      '27 00 04 00 00 00 00 25 00 49 09 78 0C 22 55 58 0D 04 05 22 F0 F8 55 98 83 EE EE EE 80 74 87 02 31 3B 37 35 30 30 37 31 00 00 0B 00 09 75 19 60 29 52 52 35 35 0E 24 05 8A 06 8C 01 8B F1 F1 4D 61 73 74 65 72 43 61 72 64 00 2A 38 30 34 30 31 31 39 32 36 20 20 20 20 20 20',
    );
    const fields = decodeBmps(data);
    expect(fields.ok).toBe(true);
    if (!fields.ok) return;
    expect(readBmps(fields.value)).toEqual({
      resultCode: 0,
      amount: 2500,
      currency: 978,
      time: '225558',
      date: '0405',
      pan: '559883******8074',
      receiptNumber: 231,
      traceNumber: 975,
      paymentType: 0x60,
      terminalId: '52523535',
      expiryDate: '2405',
      cardType: 6,
      operatorCardType: 1,
      cardName: 'MasterCard',
      vuNumber: '804011926',
    });
    expect(encodeBmps(fields.value)).toEqual(data);
  });

  it('builds fields from values, with the NUL after the card name and a padded PAN', () => {
    const fields = bmpsFrom({
      resultCode: 0,
      amount: 154,
      cardName: 'VISA',
      pan: '476173*****0119',
      receiptNumber: 42,
    });
    expect(hexBytes(encodeBmps(fields))).toBe(
      '27 00 04 00 00 00 00 01 54 22 F0 F8 47 61 73 EE EE E0 11 9F 87 00 42 8B F0 F5 56 49 53 41 00',
    );
    expect(readBmps(fields)).toMatchObject({
      pan: '476173*****0119',
      cardName: 'VISA',
      amount: 154,
    });
  });

  it('stops at an unknown BMP, and on bad LL bytes, with the offset', () => {
    expect(decodeBmps(fromHex('27 00 07 01'))).toMatchObject({
      ok: false,
      error: { code: 'unknown-bmp', offset: 2 },
    });
    expect(decodeBmps(fromHex('22 F0 A8 00'))).toMatchObject({
      ok: false,
      error: { code: 'bad-var-length', offset: 1 },
    });
    expect(decodeBmps(fromHex('04 00 00'))).toMatchObject({
      ok: false,
      error: { code: 'truncated', offset: 0 },
    });
    expect(decodeBmps(fromHex('22 F0'))).toMatchObject({ ok: false, error: { code: 'truncated' } });
    expect(decodeBmps(fromHex('06 05 07 00'))).toMatchObject({
      ok: false,
      error: { code: 'truncated' },
    });
  });

  it('refuses to encode values that do not fit their field', () => {
    expect(() => encodeBmp({ tag: 0x04, format: 'bcd', value: '1000' })).toThrow(RangeError);
    expect(() => encodeBmp({ tag: 0x07, format: 'byte', value: 1 })).toThrow(RangeError);
    expect(() => encodeBmp({ tag: 0x27, format: 'bcd', value: '00' })).toThrow(RangeError);
    expect(() => encodeBmp({ tag: 0x27, format: 'byte', value: 256 })).toThrow(RangeError);
    expect(() => encodeBmp({ tag: 0x22, format: 'bcd', value: '00'.repeat(100) })).toThrow(
      RangeError,
    );
  });

  it('reads and writes the end-of-day totals of BMP 60 (V30)', () => {
    const value = fromHex(
      `02 33 02 34 ${'00 '.repeat(14)} 02 00 00 00 00 09 58 ${'00 '.repeat(28)}`,
    );
    const totals = readTotals(value);
    expect(totals).toMatchObject({
      firstReceipt: 233,
      lastReceipt: 234,
      groups: { eurocard: { count: 2, total: 958 } },
    });
    expect(totalsBytes(totals as IndividualTotals)).toEqual(value);
    expect(readTotals(value.subarray(1))).toBeUndefined();
  });

  it('decode∘encode is the identity for field lists (property)', () => {
    fc.assert(
      fc.property(bmpList(), (fields) => {
        expect(decodeBmps(encodeBmps(fields))).toEqual({ ok: true, value: fields });
      }),
      PROPERTY,
    );
  });

  it('never throws on arbitrary bytes; what decodes re-encodes exactly (property)', () => {
    fc.assert(
      fc.property(bytes(0, 120), (input) => {
        const fields = decodeBmps(input);
        if (fields.ok) expect(encodeBmps(fields.value)).toEqual(input);
      }),
      PROPERTY,
    );
  });
});
