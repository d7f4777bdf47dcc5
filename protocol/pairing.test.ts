import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PAIRING_CODE_ALPHABET, PairingCode, formatPairingCode } from './pairing.js';

const code = fc
  .array(fc.constantFrom(...PAIRING_CODE_ALPHABET), { minLength: 8, maxLength: 8 })
  .map((chars) => chars.join(''));

describe('pairing codes', () => {
  it('read back the same however a person types them: any case, hyphen, spaces', () => {
    fc.assert(
      fc.property(code, fc.boolean(), fc.boolean(), (c, lower, spaced) => {
        let typed = formatPairingCode(c);
        if (lower) typed = typed.toLowerCase();
        if (spaced) typed = ` ${typed.replace('-', ' ')} `;
        expect(PairingCode.parse(typed)).toBe(c);
      }),
      { seed: 18, numRuns: 300 },
    );
  });

  it('refuse anything else: the letters people confuse, other lengths, other characters', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 12 }), (text) => {
        const normalised = text.toUpperCase().replace(/[\s-]/g, '');
        const valid = /^[0-9A-HJKMNP-TV-Z]{8}$/.test(normalised);
        expect(PairingCode.safeParse(text).success).toBe(valid);
      }),
      { seed: 18, numRuns: 500 },
    );
    for (const bad of ['IL0O-1234', 'ABCD-EFGU', 'ABCD-EFG', 'ABCD-EFGHJ']) {
      expect(PairingCode.safeParse(bad).success).toBe(false);
    }
  });
});
