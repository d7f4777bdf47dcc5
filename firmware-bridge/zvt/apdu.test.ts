import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { apduLength, decodeApdu, encodeApdu, fromHex, hexBytes, type Apdu } from './apdu.js';
import { PROPERTY, bytes } from './testing/arbitraries.js';
import { APDU_VECTORS } from './testing/vectors.js';

describe('APDU', () => {
  it('uses the short length form up to 254 data bytes and the long form from 255', () => {
    const apdu = (length: number): Apdu => ({ cls: 0x06, ins: 0xd3, data: Buffer.alloc(length) });
    expect(hexBytes(encodeApdu(apdu(0)))).toBe('06 D3 00');
    expect(hexBytes(encodeApdu(apdu(254)).subarray(0, 3))).toBe('06 D3 FE');
    expect(hexBytes(encodeApdu(apdu(255)).subarray(0, 5))).toBe('06 D3 FF FF 00');
    expect(hexBytes(encodeApdu(apdu(0x0461)).subarray(0, 5))).toBe('06 D3 FF 61 04');
    expect(() => encodeApdu(apdu(0x10000))).toThrow(RangeError);
    expect(() => encodeApdu({ cls: 256, ins: 0, data: Buffer.alloc(0) })).toThrow(RangeError);
  });

  it('keeps a long length form used for a short APDU (PZ ApduHelperTest)', () => {
    const bytes = fromHex('04 0F FF 01 00 6C');
    const decoded = decodeApdu(bytes);
    expect(decoded).toEqual({
      ok: true,
      value: { cls: 0x04, ins: 0x0f, data: fromHex('6C'), longLength: true },
    });
    if (decoded.ok) expect(encodeApdu(decoded.value)).toEqual(bytes);
    expect(apduLength(bytes)).toBe(6);
  });

  it('reports what is wrong with hostile bytes, with the offset', () => {
    expect(decodeApdu(fromHex('06'))).toMatchObject({
      ok: false,
      error: { code: 'truncated', offset: 0 },
    });
    expect(decodeApdu(fromHex('06 D3 FF 01'))).toMatchObject({
      ok: false,
      error: { code: 'truncated', offset: 3 },
    });
    expect(decodeApdu(fromHex('06 01 07 04 00'))).toMatchObject({
      ok: false,
      error: { code: 'truncated', offset: 5 },
    });
    expect(decodeApdu(fromHex('80 00 00 01 02'))).toMatchObject({
      ok: false,
      error: { code: 'trailing-bytes', offset: 3 },
    });
  });

  it('tells the length of an APDU from its header alone', () => {
    expect(apduLength(fromHex('80 00'))).toBeUndefined();
    expect(apduLength(fromHex('80 00 00 01 02'))).toBe(3);
    expect(apduLength(fromHex('06 D3 FF 61'))).toBeUndefined();
    expect(apduLength(fromHex('06 D3 FF 61 04'))).toBe(0x0461 + 5);
  });

  it('round-trips every vector of the notes', () => {
    for (const vector of APDU_VECTORS) {
      const decoded = decodeApdu(vector.bytes);
      expect(decoded.ok, vector.id).toBe(true);
      if (decoded.ok) expect(encodeApdu(decoded.value), vector.id).toEqual(vector.bytes);
    }
  });

  it('decode∘encode is the identity (property)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 255 }),
        fc.integer({ min: 0, max: 255 }),
        bytes(0, 700),
        (cls, ins, data) => {
          const apdu: Apdu = { cls, ins, data };
          expect(decodeApdu(encodeApdu(apdu))).toEqual({ ok: true, value: apdu });
        },
      ),
      PROPERTY,
    );
  });

  it('never throws on arbitrary bytes, and what decodes re-encodes to the same bytes (property)', () => {
    fc.assert(
      fc.property(bytes(0, 300), (input) => {
        const decoded = decodeApdu(input);
        if (decoded.ok) expect(encodeApdu(decoded.value)).toEqual(input);
        else expect(decoded.error.offset).toBeGreaterThanOrEqual(0);
      }),
      PROPERTY,
    );
  });
});
