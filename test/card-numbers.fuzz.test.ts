/**
 * Card numbers in free text (common/card-numbers.ts), against hostile text: every
 * Luhn-valid number embedded anywhere, plain or in groups, comes out masked to its first 6
 * and last 4 digits; digits that are no card number (amounts, dates, ids, numbers failing
 * the Luhn check) come out as they went in; masking twice is masking once; and no text,
 * however long or built to hurt, makes it throw or take more than linear time.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { luhnValid, maskCardNumbers } from '../common/card-numbers.js';
import { cardNumber, digit, digits, fuzzParameters, separator, written } from './support/fuzz.js';

/** Text around a number: anything, but neither a digit nor `*` right next to it. */
const surrounding = fc.string({ maxLength: 60, unit: 'binary' });
const boundary = fc.constantFrom(...'\n :/|=ABCxyz#(,');

/**
 * Whether any stretch of whole groups of `text` holding 12-19 digits (12 only when the
 * first is 5 or 6) passes the Luhn check.
 */
function someStretchPasses(groups: string[]): boolean {
  for (let first = 0; first < groups.length; first++) {
    let number = '';
    for (let last = first; last < groups.length; last++) {
      number += groups[last];
      if (number.length > 19) break;
      if (number.length === 12 && !/^[56]/.test(number)) continue;
      if (number.length >= 12 && luhnValid(number)) return true;
    }
  }
  return false;
}

/** Digits that are no card number, in the shapes receipts print them. */
const notACardNumber: fc.Arbitrary<string> = fc.oneof(
  // Amounts, dates, times, short ids.
  fc.tuple(fc.nat(99_999), fc.nat(99)).map(([a, c]) => `${a}.${String(c).padStart(2, '0')}`),
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)),
  fc.date({ noInvalidDate: true }).map((d) => d.toISOString().slice(11, 19)),
  digits(1, 11),
  fc
    .tuple(digits(1, 11), separator, digits(1, 11))
    .filter(([a, , b]) => !someStretchPasses([a, b]))
    .map(([a, s, b]) => `${a}${s}${b}`),
  // A number of a card number's length that fails the Luhn check, plain or grouped.
  fc
    .tuple(fc.constantFrom(...'123456789'), digits(11, 18))
    .map(([first, rest]) => `${first}${rest}`)
    .filter((number) => !luhnValid(number))
    .chain((number) => written(number))
    .filter((text) => !someStretchPasses(text.split(/[ .-]/))),
  // Zero-padded receipt and trace numbers: no issuer's card starts with 0.
  digits(11, 18).map((rest) => `0${rest}`),
  // An acquirer's retrieval reference (YYMMDD and a sequence): 12 digits outside Maestro's
  // ranges, Luhn-valid or not.
  fc.tuple(fc.constantFrom(...'1234789'), digits(11, 11)).map(([first, rest]) => `${first}${rest}`),
);

describe('card numbers in free text', () => {
  it('masks every card number embedded in any text, plain or grouped, to its first 6 and last 4 digits', () => {
    fc.assert(
      fc.property(
        surrounding,
        boundary,
        cardNumber.chain((n) => fc.tuple(fc.constant(n), written(n))),
        boundary,
        surrounding,
        (before, open, [number, text], close, after) => {
          const input = `${before}${open}${text}${close}${after}`;
          const out = maskCardNumbers(input);
          expect(out).toHaveLength(input.length);
          const at = before.length + open.length;
          const shown = out.slice(at, at + text.length);
          const shownDigits = [...shown].filter((c) => /[0-9*]/.test(c));
          expect(shownDigits).toHaveLength(number.length);
          // Between the first 6 and the last 4, nothing of the number is left.
          expect(shownDigits.slice(6, -4).every((c) => c === '*')).toBe(true);
          // The groups' layout is kept.
          expect(shown.replace(/[0-9*]/g, '#')).toBe(text.replace(/[0-9]/g, '#'));
        },
      ),
      fuzzParameters(300),
    );
  });

  it('leaves amounts, dates, ids and numbers that fail the Luhn check alone', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(notACardNumber, boundary, fc.string({ maxLength: 8 })), {
          maxLength: 12,
        }),
        (pieces) => {
          // Pieces apart: a boundary, then text without digits, `*` or separators at its ends.
          const text = pieces
            .map(([number, sep, words]) => `${number}${sep}${words.replace(/[0-9*. -]/g, '_')}|`)
            .join('');
          expect(maskCardNumbers(text)).toBe(text);
        },
      ),
      fuzzParameters(300),
    );
  });

  it("leaves a receipt's 12-digit retrieval reference alone, Luhn-valid or not, and masks a 12-digit Maestro number", () => {
    // 261128000005 passes the Luhn check: an acquirer reference of 2026-11-28, not a card.
    expect(maskCardNumbers('ACQ REF         261128000005\n')).toBe(
      'ACQ REF         261128000005\n',
    );
    expect(maskCardNumbers('CARD 501800000009')).toBe('CARD 501800**0009');
  });

  it('masks once: masking masked text changes nothing', () => {
    const dense = fc
      .array(fc.oneof(digit, digit, digit, separator, fc.constantFrom('*', 'a', '\n')), {
        maxLength: 400,
      })
      .map((c) => c.join(''));
    // Long runs of groups, card numbers among them: where masking one could expose another.
    const grouped = fc
      .array(fc.oneof(digits(3, 8), cardNumber, cardNumber.chain(written)), {
        minLength: 2,
        maxLength: 12,
      })
      .chain((groups) =>
        fc
          .array(separator, { minLength: groups.length, maxLength: groups.length })
          .map((seps) => groups.map((g, i) => `${g}${seps[i]}`).join('')),
      );
    fc.assert(
      fc.property(
        fc.oneof(grouped, dense, fc.string({ maxLength: 200, unit: 'binary' })),
        (text) => {
          const once = maskCardNumbers(text);
          expect(maskCardNumbers(once)).toBe(once);
          // Only digits ever change, and only to `*`.
          for (let i = 0; i < text.length; i++) {
            if (once[i] !== text[i]) expect([/[0-9]/.test(text[i]!), once[i]]).toEqual([true, '*']);
          }
        },
      ),
      fuzzParameters(500),
    );
  });

  it('never throws, and takes linear time on long hostile text', () => {
    const hostile = [
      '1'.repeat(200_000),
      '4761 '.repeat(40_000),
      '476 '.repeat(50_000),
      '4-'.repeat(100_000),
      '4761739001010119 '.repeat(12_000),
      '4761 7390 0101 0119 '.repeat(10_000),
      '1.2.3.'.repeat(35_000),
      '*1'.repeat(100_000),
      '123-456.789 012-'.repeat(12_000),
    ];
    for (const text of hostile) {
      const started = performance.now();
      const out = maskCardNumbers(text);
      expect(out).toHaveLength(text.length);
      // A quadratic scan of 200,000 characters takes hours; a linear one well under this.
      expect(performance.now() - started, text.slice(0, 20)).toBeLessThan(10_000);
    }
    fc.assert(
      fc.property(fc.string({ maxLength: 2000, unit: 'binary' }), (text) => {
        expect(maskCardNumbers(text)).toHaveLength(text.length);
      }),
      fuzzParameters(300),
    );
  });
});
