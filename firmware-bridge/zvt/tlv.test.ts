import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fromHex, hexBytes } from './apdu.js';
import { PROPERTY, bytes, tlvs } from './testing/arbitraries.js';
import {
  berLength,
  decodeTlvs,
  encodeTlvs,
  findAllValues,
  findTlv,
  isConstructed,
  MAX_TLV_DEPTH,
  tagBytes,
} from './tlv.js';

describe('TLV container', () => {
  it('reads 1-, 2- and 3-byte tags and BER lengths', () => {
    const items = decodeTlvs(
      fromHex('07 00 1F 07 01 02 1F 80 01 01 AA 25 81 02 07 00 09 82 00 01 FF'),
    );
    expect(items).toEqual({
      ok: true,
      value: [
        { tag: 0x07, value: Buffer.alloc(0) },
        { tag: 0x1f07, value: fromHex('02') },
        { tag: 0x1f8001, value: fromHex('AA') },
        { tag: 0x25, items: [{ tag: 0x07, value: Buffer.alloc(0) }], lengthBytes: 2 },
        { tag: 0x09, value: fromHex('FF'), lengthBytes: 3 },
      ],
    });
    if (items.ok) {
      expect(hexBytes(encodeTlvs(items.value))).toBe(
        '07 00 1F 07 01 02 1F 80 01 01 AA 25 81 02 07 00 09 82 00 01 FF',
      );
    }
  });

  it('keeps a constructed tag holding plain data as raw bytes (Feig FFxx)', () => {
    const result = decodeTlvs(fromHex('FF 41 03 41 42 43'));
    expect(result).toEqual({ ok: true, value: [{ tag: 0xff41, value: fromHex('41 42 43') }] });
  });

  it('finds nested objects and every text line', () => {
    const result = decodeTlvs(fromHex('24 08 07 02 41 42 07 02 43 44 1F 07 01 02'));
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(findTlv(result.value, 0x1f07)).toEqual({ tag: 0x1f07, value: fromHex('02') });
    expect(findAllValues(result.value, 0x07).map((v) => v.toString())).toEqual(['AB', 'CD']);
  });

  it('reports bad lengths, cut objects and over-long tags without throwing', () => {
    expect(decodeTlvs(fromHex('07 83 00 00 01'))).toMatchObject({
      ok: false,
      error: { code: 'bad-ber-length', offset: 1 },
    });
    expect(decodeTlvs(fromHex('07 05 41'))).toMatchObject({
      ok: false,
      error: { code: 'truncated', offset: 0 },
    });
    expect(decodeTlvs(fromHex('1F 81 82 83 84 01 00'))).toMatchObject({
      ok: false,
      error: { code: 'bad-tlv-tag' },
    });
    expect(decodeTlvs(fromHex('1F 81'))).toMatchObject({ ok: false, error: { code: 'truncated' } });
  });

  it('stops nesting at MAX_TLV_DEPTH, keeping deeper levels as bytes', () => {
    let bytesOf = fromHex('07 00');
    for (let i = 0; i < MAX_TLV_DEPTH + 4; i++)
      bytesOf = Buffer.concat([Buffer.from([0x24, bytesOf.length]), bytesOf]);
    const result = decodeTlvs(bytesOf);
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    let depth = 0;
    let item = result.value[0];
    while (item && isConstructed(item)) {
      depth++;
      item = item.items[0];
    }
    expect(depth).toBe(MAX_TLV_DEPTH);
    expect(encodeTlvs(result.value)).toEqual(bytesOf);
  });

  it('refuses to encode what is no tag or length', () => {
    expect(() => tagBytes(0x1f)).toThrow(RangeError);
    expect(() => tagBytes(0x0107)).toThrow(RangeError);
    expect(() => tagBytes(0x1f87)).toThrow(RangeError);
    expect(hexBytes(tagBytes(0x1f8001))).toBe('1F 80 01');
    expect(hexBytes(berLength(0x7f))).toBe('7F');
    expect(hexBytes(berLength(0x80))).toBe('81 80');
    expect(hexBytes(berLength(0x100))).toBe('82 01 00');
    expect(() => berLength(0x10000)).toThrow(RangeError);
  });

  it('decode∘encode is the identity (property)', () => {
    fc.assert(
      fc.property(tlvs, (items) => {
        expect(decodeTlvs(encodeTlvs(items))).toEqual({ ok: true, value: items });
      }),
      PROPERTY,
    );
  });

  it('never throws on arbitrary bytes; what decodes re-encodes exactly (property)', () => {
    fc.assert(
      fc.property(bytes(0, 200), (input) => {
        const result = decodeTlvs(input);
        if (result.ok) expect(encodeTlvs(result.value)).toEqual(input);
      }),
      PROPERTY,
    );
  });
});
