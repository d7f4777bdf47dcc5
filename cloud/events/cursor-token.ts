/**
 * `next_token`: where a reader is in the event log and what it filters on, opaque and
 * tamper-proof (HMAC-SHA256 over the content with a key kept in the store), bound to the
 * account that was given it.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { ApiError } from '../errors.js';
import type { Store } from '../store/store.js';

export const CursorSchema = z.object({
  /** Position of the last event handed out. */
  p: z.number().int().min(0),
  /** Account the token belongs to. */
  a: z.string(),
  /** Subject filter: a terminal id or the account's cohort. */
  s: z.string().optional(),
  /** Type filter, as the client gave it. */
  y: z.string().optional(),
});
export type Cursor = z.infer<typeof CursorSchema>;

export class CursorTokens {
  constructor(private readonly key: Buffer) {}

  private mac(payload: string): Buffer {
    return createHmac('sha256', this.key).update(payload).digest().subarray(0, 16);
  }

  encode(cursor: Cursor): string {
    const payload = Buffer.from(JSON.stringify(cursor)).toString('base64url');
    return `${payload}.${this.mac(payload).toString('base64url')}`;
  }

  decode(token: string, accountId: string): Cursor {
    const invalid = new ApiError('INVALID_TOKEN', 'next_token is not one this service issued');
    const [payload, mac] = token.split('.');
    if (!payload || !mac) throw invalid;
    const expected = this.mac(payload);
    const given = Buffer.from(mac, 'base64url');
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid;
    let cursor: Cursor;
    try {
      cursor = CursorSchema.parse(JSON.parse(Buffer.from(payload, 'base64url').toString()));
    } catch {
      throw invalid;
    }
    if (cursor.a !== accountId) throw invalid;
    return cursor;
  }
}

/** The key that signs event-list tokens, made once and kept, so tokens survive restarts. */
export async function storedCursorTokens(
  store: Pick<Store, 'claimSetting'>,
): Promise<CursorTokens> {
  const stored = await store.claimSetting('event_token_key', randomBytes(32).toString('base64'));
  return new CursorTokens(Buffer.from(stored, 'base64'));
}
