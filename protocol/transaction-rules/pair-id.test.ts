import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TransactionId } from '../fields.js';
import { pairTransactionId } from './pair-id.js';

describe('pairTransactionId', () => {
  it('is txn- and 26 base32 characters, a valid transaction id', () => {
    const id = pairTransactionId('t-1000000001', 'order-1');
    expect(id).toMatch(/^txn-[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(TransactionId.safeParse(id).success).toBe(true);
  });

  it('names a pair the same every time, and another pair otherwise', () => {
    expect(pairTransactionId('t-1', 'a')).toBe(pairTransactionId('t-1', 'a'));
    expect(pairTransactionId('t-1', 'a')).not.toBe(pairTransactionId('t-1', 'b'));
    expect(pairTransactionId('t-1', 'a')).not.toBe(pairTransactionId('t-2', 'a'));
  });

  it('separates the two parts, so moving a character across them is another pair', () => {
    expect(pairTransactionId('t-1a', 'b')).not.toBe(pairTransactionId('t-1', 'ab'));
  });

  it('takes the first 130 bits of SHA-256 over terminal_id, NUL, external_id', () => {
    const digest = createHash('sha256').update('t-1\u0000a').digest();
    const first = digest[0]!;
    // The first character is the digest's top five bits.
    const alphabet = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
    expect(pairTransactionId('t-1', 'a')[4]).toBe(alphabet[first >> 3]);
  });
});
