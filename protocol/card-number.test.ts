import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isMaskedCardNumber, renderTransaction, type Transaction } from './transaction.js';

const digits = (min: number, max: number) =>
  fc
    .array(fc.constantFrom(...'0123456789'), { minLength: min, maxLength: max })
    .map((d) => d.join(''));

describe('masked card numbers', () => {
  it('accepts any 13-19 character number showing at most its first 6 and last 4 digits', () => {
    fc.assert(
      fc.property(digits(13, 19), fc.boolean(), fc.boolean(), (pan, first, last) => {
        const middle = '*'.repeat(pan.length - 10);
        const masked = `${first ? pan.slice(0, 6) : '******'}${middle}${last ? pan.slice(-4) : '****'}`;
        expect(isMaskedCardNumber(masked)).toBe(true);
      }),
    );
  });

  it('refuses a number with any digit between its first 6 and last 4, and the wrong lengths', () => {
    fc.assert(
      fc.property(digits(13, 19), fc.nat(), (pan, at) => {
        const chars = [...`${pan.slice(0, 6)}${'*'.repeat(pan.length - 10)}${pan.slice(-4)}`];
        chars[6 + (at % (pan.length - 10))] = pan[6]!;
        expect(isMaskedCardNumber(chars.join(''))).toBe(false);
        expect(isMaskedCardNumber(pan)).toBe(false);
      }),
    );
    for (const wrong of ['476173**0119', '476173**********0119', '476173-*****-0119', '']) {
      expect(isMaskedCardNumber(wrong), wrong).toBe(false);
    }
  });

  it('is never served unmasked, whatever a store holds', () => {
    const txn = {
      created_at: '2026-01-01T00:00:00.000Z',
      updated_at: '2026-01-01T00:00:00.000Z',
      payment_method_details: {
        payment_method: 'CARD',
        card_number_customer: '4761739001010119',
        card_number_merchant: '476173******0119',
      },
    } as unknown as Transaction;
    for (const revision of ['v0', 'v1'] as const) {
      expect(renderTransaction(txn, revision).payment_method_details).toEqual({
        payment_method: 'CARD',
        card_number_merchant: '476173******0119',
      });
    }
  });
});
