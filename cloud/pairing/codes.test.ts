import { describe, expect, it } from 'vitest';
import { PAIRING_CODE_ALPHABET, PairingCode } from '../../protocol/index.js';
import { newPairingCode } from './codes.js';

describe('newPairingCode', () => {
  it('draws 8 characters of the 32, every one of them in use', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 2000; i++) {
      const code = newPairingCode();
      expect(PairingCode.parse(code)).toBe(code);
      for (const c of code) seen.add(c);
    }
    expect([...seen].sort().join('')).toBe([...PAIRING_CODE_ALPHABET].sort().join(''));
  });
});
