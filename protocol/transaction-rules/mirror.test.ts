import { describe, expect, it } from 'vitest';
import type { Transaction } from '../transaction.js';
import type { ChangeContext, TransactionRecord } from './decision.js';
import { decideMirror } from './mirror.js';

const reported: Transaction = {
  id: 'txn-LOCAL',
  terminal_id: 't-1',
  external_id: 'order-1',
  type: 'PURCHASE',
  state: 'AWAITING_CONFIRM',
  created_at: '2026-11-21T12:00:00.000Z',
  updated_at: '2026-11-21T12:00:05.000Z',
  requested_amount: 1000,
  currency: 'EUR',
  result_code: 'SUCCESS',
};
const ctx = (current?: TransactionRecord): ChangeContext => ({
  terminalOwner: 'acct-1',
  current,
  active: undefined,
  unconfirmedCount: 0,
});

describe('decideMirror', () => {
  it('inserts a pair the relay does not have, marked made locally, owned by the terminal’s account', () => {
    const { write, result } = decideMirror(reported)(ctx());
    expect(write).toEqual({
      txn: { ...reported, made_locally: true },
      accountId: 'acct-1',
      version: 1,
    });
    expect(result.record).toBe(write);
  });

  it('takes the agent’s record for the same id, with nothing due on the relay', () => {
    const current: TransactionRecord = {
      txn: { ...reported, state: 'PROCESSING', made_locally: true },
      accountId: 'acct-1',
      dueAt: '2026-11-21T13:00:00.000Z',
      version: 3,
    };
    const { write } = decideMirror({ ...reported, state: 'CONFIRMED' })(ctx(current));
    expect(write).toEqual({
      txn: { ...reported, state: 'CONFIRMED', made_locally: true },
      accountId: 'acct-1',
      version: 4,
    });
  });

  it('keeps a transaction the relay made unmarked when the agent decides it (local mode’s cloud path)', () => {
    const current: TransactionRecord = {
      txn: { ...reported, state: 'PROCESSING' },
      accountId: 'acct-1',
      dueAt: '2026-11-21T12:01:00.000Z',
      version: 1,
    };
    const { write } = decideMirror({ ...reported, made_locally: true })(ctx(current));
    expect(write).toEqual({ txn: reported, accountId: 'acct-1', version: 2 });
  });

  it('marks a pair the agent made before the relay’s start reached it, though the relay committed it first', () => {
    const current: TransactionRecord = {
      txn: { ...reported, state: 'PROCESSING', created_at: '2026-11-21T12:00:30.000Z' },
      accountId: 'acct-1',
      version: 1,
    };
    const { write } = decideMirror({ ...reported, made_locally: true })(ctx(current));
    expect(write).toEqual({
      txn: { ...reported, made_locally: true },
      accountId: 'acct-1',
      version: 2,
    });
  });

  it('records a mismatch and writes nothing when the relay holds the pair as another transaction', () => {
    const current: TransactionRecord = {
      txn: { ...reported, id: 'txn-CLOUD', requested_amount: 999, state: 'PROCESSING' },
      accountId: 'acct-1',
      version: 1,
    };
    const decision = decideMirror(reported)(ctx(current));
    expect(decision.write).toBeUndefined();
    expect(decision.result.mismatch).toMatch(/txn-CLOUD .*999.*txn-LOCAL .*1000/);
  });

  it('applies nothing for a terminal the relay does not know', () => {
    expect(decideMirror(reported)({ ...ctx(), terminalOwner: undefined }).write).toBeUndefined();
  });
});
