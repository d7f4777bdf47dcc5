import { describe, expect, it } from 'vitest';
import { eventKindOf } from './events.js';

describe('event kinds', () => {
  it('are recognised by their suffix, whatever the vendor part', () => {
    expect(eventKindOf('eu.vendor.api.pos.v0.Transaction')).toBe('Transaction');
    expect(eventKindOf('eu.acme-pay.api.pos.v0.TerminalStatus')).toBe('TerminalStatus');
  });

  it('leave types the client does not know unrecognised', () => {
    expect(eventKindOf('eu.vendor.api.pos.v0.Payout')).toBeUndefined();
    expect(eventKindOf('eu.vendor.api.pos.v0.TransactionSummary')).toBeUndefined();
    expect(eventKindOf('Transaction')).toBeUndefined();
  });
});
