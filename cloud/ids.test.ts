import { describe, expect, it } from 'vitest';
import { decodeTime } from 'ulid';
import { newEventId, newTransactionId } from './ids.js';

const CROCKFORD = /^[0-9A-HJKMNP-TV-Z]{26}$/;

describe('relay ids', () => {
  it('are ULIDs: Crockford base32, time first, increasing within a millisecond', () => {
    const ids = Array.from({ length: 5_000 }, () => newTransactionId().slice('txn-'.length));
    for (const id of ids) expect(id).toMatch(CROCKFORD);
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    expect(Math.abs(decodeTime(ids[0]!) - Date.now())).toBeLessThan(5_000);
  });

  it('draw their random part afresh each millisecond, every character in use', async () => {
    const randomParts = new Set<string>();
    const seen = new Set<string>();
    for (let i = 0; i < 200; i++) {
      const id = newEventId().slice('evt-'.length);
      randomParts.add(id.slice(10));
      for (const c of id.slice(10)) seen.add(c);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    expect(randomParts.size).toBe(200);
    expect(seen.size).toBe(32);
  });
});
