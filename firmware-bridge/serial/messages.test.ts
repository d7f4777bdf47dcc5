import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_PAYLOAD } from './codec.js';
import { hostSamples, largestResult, readerSamples } from './message-samples.js';
import { HostMessage, ReaderMessage, parseMessage } from './messages.js';

const typesOf = (union: typeof HostMessage | typeof ReaderMessage) =>
  union.options.map((option) => option.shape.type.value).sort();

describe('serial messages', () => {
  it('has a sample of every message type, each valid in its own direction only', () => {
    expect(new Set(hostSamples.map((m) => m.type))).toEqual(new Set(typesOf(HostMessage)));
    expect(new Set(readerSamples.map((m) => m.type))).toEqual(new Set(typesOf(ReaderMessage)));
    expect(typesOf(HostMessage)).toHaveLength(6);
    expect(typesOf(ReaderMessage)).toHaveLength(5);
    for (const message of hostSamples) {
      expect(parseMessage(HostMessage, message)).toEqual({ ok: true, message });
      expect(parseMessage(ReaderMessage, message).ok).toBe(false);
    }
    for (const message of readerSamples) {
      expect(parseMessage(ReaderMessage, message)).toEqual({ ok: true, message });
      expect(parseMessage(HostMessage, message).ok).toBe(false);
    }
  });

  it('fits the largest valid message in one frame', () => {
    const size = Buffer.byteLength(JSON.stringify(largestResult));
    expect(size).toBeGreaterThan(6000);
    expect(size).toBeLessThanOrEqual(DEFAULT_MAX_PAYLOAD);
  });

  it('refuses with a reason that names the envelope version or the field', () => {
    const start = hostSamples[1] as HostMessage;
    expect(parseMessage(HostMessage, { ...start, v: 2 })).toEqual({
      ok: false,
      reason: 'unsupported message envelope version 2 (expected 1)',
    });
    expect(parseMessage(HostMessage, [start])).toEqual({
      ok: false,
      reason: 'message must be a JSON object',
    });
    expect(parseMessage(HostMessage, { ...start, cashback_amount: 100 })).toEqual({
      ok: false,
      reason: 'cashback_amount: cashback_amount is allowed only on a PURCHASE',
    });
    const bad = parseMessage(HostMessage, { ...start, currency: 'eur', requested_amount: -1 });
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.reason).toMatch(/requested_amount: .*; currency: must be 3 uppercase/);
    expect(parseMessage(HostMessage, { v: 1, type: 'transaction.result' })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('type: Invalid discriminator value'),
    });
  });

  it('requires a result code exactly when the last transaction is final', () => {
    const answer = (transaction: object) => ({
      v: 1,
      type: 'last_transaction.answer',
      transaction,
    });
    expect(
      parseMessage(ReaderMessage, answer({ transaction_id: 't1', phase: 'COMPLETED' })).ok,
    ).toBe(false);
    expect(
      parseMessage(
        ReaderMessage,
        answer({ transaction_id: 't1', phase: 'IN_PROGRESS', result_code: 'SUCCESS' }),
      ).ok,
    ).toBe(false);
    expect(
      parseMessage(
        ReaderMessage,
        answer({ transaction_id: 't1', phase: 'CANCELLED', result_code: 'CANCELLED' }),
      ).ok,
    ).toBe(true);
  });

  it('checks the result details with the terminal-link contract', () => {
    const result = {
      v: 1,
      type: 'transaction.result',
      transaction_id: 'tx-1',
      phase: 'COMPLETED',
      result_code: 'SUCCESS',
      details: { payment_method_details: { payment_method: 'CARD', card_scheme: 'NOPE' } },
    };
    const parsed = parseMessage(ReaderMessage, result);
    expect(parsed.ok).toBe(false);
    expect(!parsed.ok && parsed.reason).toMatch(/^details\.payment_method_details\.card_scheme: /);
  });
});
