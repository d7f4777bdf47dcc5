import { describe, expect, it } from 'vitest';
import type { TransactionRow } from './journal.js';
import type { ReaderRecord } from './ports.js';
import { reconcile } from './recovery.js';

const row = (
  state: TransactionRow['state'],
  extra: Partial<TransactionRow> = {},
): TransactionRow => ({
  transaction_id: 'tx',
  state,
  cancel_requested: false,
  continue_requested: false,
  created_at: '',
  updated_at: '',
  ...extra,
});
const record = (phase: ReaderRecord['phase'], result_code?: string, id = 'tx'): ReaderRecord => ({
  transaction_id: id,
  phase,
  ...(result_code ? { result_code } : {}),
});
const cold = { startDelivered: false };

describe('reconciliation with the reader record', () => {
  it('a transaction that is not the reader last one never ran', () => {
    for (const state of ['QUEUED', 'RUNNING', 'PAUSED'] as const) {
      expect(reconcile(row(state), null, cold).action).toBe('never-ran');
      expect(reconcile(row(state), record('COMPLETED', 'SUCCESS', 'other'), cold).action).toBe(
        'never-ran',
      );
    }
  });

  it('never claims "never ran" for a start the reader acknowledged', () => {
    expect(reconcile(row('RUNNING'), null, { startDelivered: true })).toEqual({
      action: 'running',
      cancel: false,
    });
  });

  it('adopts what the reader says about its last transaction', () => {
    expect(reconcile(row('RUNNING'), record('IN_PROGRESS'), cold)).toEqual({
      action: 'running',
      cancel: false,
    });
    expect(
      reconcile(row('RUNNING', { cancel_requested: true }), record('IN_PROGRESS'), cold),
    ).toEqual({
      action: 'running',
      cancel: true,
    });
    expect(reconcile(row('RUNNING'), record('CUSTOMER_IDENTIFIED'), cold)).toMatchObject({
      action: 'paused',
      report: true,
      cancel: false,
    });
    expect(reconcile(row('PAUSED'), record('CUSTOMER_IDENTIFIED'), cold)).toMatchObject({
      report: false,
    });
    expect(
      reconcile(row('RUNNING', { continue_requested: true }), record('CUSTOMER_IDENTIFIED'), cold),
    ).toEqual({
      action: 'resend-continue',
    });
    expect(reconcile(row('PAUSED'), record('COMPLETED', 'DECLINED_BY_ISSUER'), cold)).toEqual({
      action: 'final',
      phase: 'COMPLETED',
      outcome: { result_code: 'DECLINED_BY_ISSUER' },
      reverse: false,
    });
    expect(
      reconcile(row('RUNNING', { cancel_requested: true }), record('COMPLETED', 'SUCCESS'), cold),
    ).toMatchObject({
      action: 'final',
      reverse: true,
    });
  });

  it('finishes an owed reversal, and reverses a charge made after a cancel', () => {
    const owed = row('COMPLETED', { cancel_requested: true, result: { result_code: 'SUCCESS' } });
    expect(reconcile(owed, record('COMPLETED', 'SUCCESS'), cold).action).toBe('reverse');
    expect(reconcile(owed, null, cold).action).toBe('reverse');
    expect(reconcile(owed, record('CANCELLED', 'REVERSED'), cold)).toEqual({
      action: 'reversed',
      outcome: { result_code: 'REVERSED' },
    });
    expect(reconcile(row('CANCELLED'), record('COMPLETED', 'SUCCESS'), cold).action).toBe(
      'charged-after-cancel',
    );
    expect(
      reconcile(row('COMPLETED', { result: { result_code: 'SUCCESS' } }), null, cold).action,
    ).toBe('none');
  });
});
