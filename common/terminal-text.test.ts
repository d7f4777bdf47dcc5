import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MULTILINE_TEXT, PLAIN_TEXT, printable, printableJson } from './terminal-text.js';

/** What a terminal obeys: C0 but newline and tab, DEL, C1, bidi controls, U+2028/9. */
const BIDI_AND_SEPARATORS = new Set([
  0x061c, 0x200e, 0x200f, 0x2028, 0x2029, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067,
  0x2068, 0x2069,
]);
const obeyed = (text: string): boolean =>
  [...text].some((char) => {
    const code = char.codePointAt(0)!;
    return (
      (code < 0x20 && code !== 0x0a && code !== 0x09) ||
      (code >= 0x7f && code <= 0x9f) ||
      BIDI_AND_SEPARATORS.has(code)
    );
  });

describe('printable', () => {
  it('shows control characters as escapes', () => {
    expect(printable('\x1b]52;c;ZXZpbA==\x07ok')).toBe('\\x1b]52;c;ZXZpbA==\\x07ok');
    expect(printable('a\x9b2Jb\x7fc\rd')).toBe('a\\x9b2Jb\\x7fc\\x0dd');
    expect(printable('paid\u202e cba')).toBe('paid\\u202e cba');
    expect(printable('one\ntwo\tthree')).toBe('one\\x0atwo\\x09three');
    expect(printable('one\ntwo\tthree\x1b[1A', { multiline: true })).toBe(
      'one\ntwo\tthree\\x1b[1A',
    );
    expect(printable('Kartenzahlung — 12,50 €')).toBe('Kartenzahlung — 12,50 €');
  });

  it('leaves nothing a terminal obeys, in any text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 100 }), (text) => {
        expect(printable(text)).toMatch(PLAIN_TEXT);
        expect(printable(text, { multiline: true })).toMatch(MULTILINE_TEXT);
        expect(obeyed(printable(text, { multiline: true }))).toBe(false);
      }),
    );
  });
});

describe('printableJson', () => {
  it('escapes what JSON.stringify leaves raw, and parses back to the same value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string({ unit: 'binary', maxLength: 50 }), (value, text) => {
        const written = printableJson({ value, text }, 2);
        expect(obeyed(written.replaceAll('\n', ''))).toBe(false);
        expect(JSON.parse(written)).toEqual(JSON.parse(JSON.stringify({ value, text })));
      }),
    );
    expect(printableJson({ t: '\x9b\u2028\u202e' })).toBe('{"t":"\\u009b\\u2028\\u202e"}');
  });
});
