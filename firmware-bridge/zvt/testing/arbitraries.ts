/**
 * fast-check generators of ZVT values, for the codec's property tests. Test-only. Every
 * generated value is canonical (minimal lengths, primitive values only under primitive
 * tags), so that decode(encode(value)) must give the value back.
 */
import fc from 'fast-check';
import { BMP_SPECS, type Bmp, type BmpSpec } from '../bmp.js';
import { CP437_CHARACTERS, nibblesOf } from '../encodings.js';
import type { Tlv, TlvContainer } from '../tlv.js';

/** The settings of every property test: fixed seed, bounded runs. */
export const PROPERTY = { seed: 20_240_607, numRuns: 300 } as const;

export const bytes = (min: number, max: number) =>
  fc.uint8Array({ minLength: min, maxLength: max }).map((array) => Buffer.from(array));

const cp437Text = (max: number) =>
  fc.array(fc.constantFrom(...CP437_CHARACTERS), { maxLength: max }).map((chars) => chars.join(''));

/** Primitive tags: 1 byte without the constructed bit, or 1F xx. */
const primitiveTag = fc.oneof(
  fc.integer({ min: 0, max: 0xff }).filter((tag) => (tag & 0x20) === 0 && (tag & 0x1f) !== 0x1f),
  fc.integer({ min: 0, max: 0x7f }).map((low) => 0x1f00 | low),
);
/** Constructed tags: 1 byte with the constructed bit, or 3F xx. */
const constructedTag = fc.oneof(
  fc.integer({ min: 0, max: 0xff }).filter((tag) => (tag & 0x20) !== 0 && (tag & 0x1f) !== 0x1f),
  fc.integer({ min: 0, max: 0x7f }).map((low) => 0x3f00 | low),
);

export const tlvs: fc.Arbitrary<Tlv[]> = fc.letrec<{ tlv: Tlv; list: Tlv[] }>((tie) => ({
  tlv: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.record({ tag: primitiveTag, value: bytes(0, 140) }),
    fc.record({ tag: constructedTag, items: tie('list') }),
  ),
  list: fc.array(tie('tlv'), { maxLength: 4 }),
})).list;

export const container: fc.Arbitrary<TlvContainer> = tlvs.map((items) => ({ items }));

function valueFor(entry: BmpSpec): fc.Arbitrary<Bmp> {
  const { tag } = entry;
  const size = (max: number) =>
    typeof entry.length === 'number' ? { min: entry.length, max: entry.length } : { min: 0, max };
  const varMax = entry.length === 'LL' ? 99 : 300;
  switch (entry.format) {
    case 'byte':
      return fc.integer({ min: 0, max: 0xff }).map((value) => ({ tag, format: 'byte', value }));
    case 'bcd': {
      const { min, max } = size(varMax);
      return bytes(min, max).map((value) => ({ tag, format: 'bcd', value: nibblesOf(value) }));
    }
    case 'ascii': {
      const { min, max } = size(varMax);
      return bytes(min, max).map((value) => ({
        tag,
        format: 'ascii',
        value: value.toString('latin1'),
      }));
    }
    case 'text': {
      const { max } = size(varMax);
      return cp437Text(max).map((value) => ({ tag, format: 'text', value }));
    }
    case 'binary': {
      const { min, max } = size(varMax);
      return bytes(min, max).map((value) => ({ tag, format: 'binary', value }));
    }
    case 'tlv':
      return container.map((value) => ({ tag, format: 'tlv', value }));
  }
}

export const bmp: fc.Arbitrary<Bmp> = fc.oneof(...[...BMP_SPECS.values()].map(valueFor));

export const bmpList = (max = 6) => fc.array(bmp, { maxLength: max });
