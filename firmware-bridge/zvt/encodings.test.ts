import { describe, expect, it } from 'vitest';
import { fromHex } from './apdu.js';
import {
  bcdFromDecimal,
  CP437_CHARACTERS,
  decimalFromBcd,
  decodeCp437,
  encodeCp437,
  nibblesOf,
  readVarLength,
  varLengthPrefix,
} from './encodings.js';

describe('ZVT encodings', () => {
  it('writes amounts as 12 BCD digits, high nibble first', () => {
    expect(bcdFromDecimal(1000, 6)).toEqual(fromHex('00 00 00 00 10 00'));
    expect(bcdFromDecimal(999_999_999_999, 6)).toEqual(fromHex('99 99 99 99 99 99'));
    expect(() => bcdFromDecimal(1_000_000_000_000, 6)).toThrow(RangeError);
    expect(() => bcdFromDecimal(-1, 6)).toThrow(RangeError);
    expect(() => bcdFromDecimal(1.5, 6)).toThrow(RangeError);
  });

  it('keeps BCD nibbles exactly, and reads numbers only from decimal digits', () => {
    expect(nibblesOf(fromHex('55 98 83 EE EE EE 80 74'))).toBe('559883EEEEEE8074');
    expect(decimalFromBcd('000000002500')).toBe(2500);
    expect(decimalFromBcd('5598EE')).toBeUndefined();
  });

  it('reads and writes LL and LLL lengths', () => {
    expect(readVarLength(fromHex('F1 F1'))).toBe(11);
    expect(readVarLength(fromHex('F0 F5 F3'))).toBe(53);
    expect(readVarLength(fromHex('F1 E1'))).toBeUndefined();
    expect(readVarLength(fromHex('F1 FA'))).toBeUndefined();
    expect(varLengthPrefix(40, 3)).toEqual(fromHex('F0 F4 F0'));
    expect(() => varLengthPrefix(100, 2)).toThrow(RangeError);
  });

  it('maps all 256 bytes of CP437 to distinct characters (V19: ä ö ü ß)', () => {
    expect(new Set(CP437_CHARACTERS).size).toBe(256);
    expect(decodeCp437(fromHex('84 94 81 E1'))).toBe('äöüß');
    const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    expect(encodeCp437(decodeCp437(all))).toEqual(all);
    expect(encodeCp437('€')).toEqual(fromHex('3F'));
  });
});
