/**
 * One test (or more) per row of the spec's transition table, on the pure decisions.
 * The HTTP tests in test/ drive the same rows end to end.
 */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../api-error.js';
import type { Transaction } from '../transaction.js';
import type { ChangeContext, TransactionRecord } from './decision.js';
import {
  decideConfirm,
  decideContinue,
  decideCreate,
  decideDue,
  decideReport,
  refundableAmount,
  type DecisionEnv,
} from './state-machine.js';

const NOW = new Date('2026-11-21T12:00:00.000Z');
let ids = 0;
const env = (now = NOW): DecisionEnv => ({
  now,
  newTransactionId: () => `txn-${++ids}`,
  newCommandId: () => `cmd-${++ids}`,
  settings: {
    maxUnconfirmed: 3,
    startTtlMs: 30_000,
    pauseTimeoutMs: 60_000,
    gracePeriodMs: 3_600_000,
  },
});

function record(patch: Partial<Transaction>, extra: Partial<TransactionRecord> = {}) {
  return {
    txn: {
      id: 'txn-a',
      terminal_id: 't-1',
      external_id: 'order-1',
      type: 'PURCHASE',
      state: 'PROCESSING',
      created_at: NOW.toISOString(),
      updated_at: NOW.toISOString(),
      requested_amount: 1000,
      currency: 'EUR',
      ...patch,
    },
    accountId: 'acct-1',
    version: 1,
    ...extra,
  } satisfies TransactionRecord;
}

const ctx = (patch: Partial<ChangeContext> = {}): ChangeContext => ({
  terminalOwner: 'acct-1',
  current: undefined,
  active: undefined,
  unconfirmedCount: 0,
  ...patch,
});

const purchase = (patch: Record<string, unknown> = {}) => ({
  kind: 'PURCHASE' as const,
  request: {
    terminal_id: 't-1',
    external_id: 'order-1',
    requested_amount: 1000,
    currency: 'EUR',
    ...patch,
  },
});

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (error instanceof ApiError) return error.code;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('create', () => {
  it('(none) → PROCESSING, and the start command is queued in the same change', () => {
    const change = decideCreate(purchase({ cashback_amount: 200 }), 'acct-1', env())(ctx());
    expect(change.write?.txn).toMatchObject({
      state: 'PROCESSING',
      type: 'PURCHASE',
      requested_amount: 1000,
      cashback_amount: 200,
    });
    expect(change.commands).toEqual([
      expect.objectContaining({
        type: 'transaction.start',
        transaction_id: change.write?.txn.id,
        kind: 'PURCHASE',
        requested_amount: 1000,
        cashback_amount: 200,
        pause_on_customer_identified: false,
        expires_at: '2026-11-21T12:00:30.000Z',
      }),
    ]);
  });

  it('a repeat answers the current state and starts nothing', () => {
    const current = record({ state: 'AWAITING_CONFIRM', result_code: 'SUCCESS' });
    const change = decideCreate(purchase(), 'acct-1', env())(ctx({ current }));
    expect(change.write).toBeUndefined();
    expect(change.commands).toBeUndefined();
    expect(change.result).toBe(current);
  });

  it('a repeat with another amount, currency or type is refused, not merged', () => {
    const current = record({});
    for (const changed of [{ requested_amount: 999 }, { currency: 'SEK' }]) {
      expect(
        refusal(() => decideCreate(purchase(changed), 'acct-1', env())(ctx({ current }))),
      ).toBe('IDEMPOTENCY_MISMATCH');
    }
    const refund = { kind: 'REFUND' as const, request: purchase().request };
    expect(refusal(() => decideCreate(refund, 'acct-1', env())(ctx({ current })))).toBe(
      'IDEMPOTENCY_MISMATCH',
    );
  });

  it('a pair first seen in a failure confirm starts nothing', () => {
    const current = record({ type: 'UNKNOWN', state: 'COMMITTED', result_code: 'ABORTED' });
    const change = decideCreate(
      purchase({ requested_amount: 5 }),
      'acct-1',
      env(),
    )(ctx({ current }));
    expect(change.result).toBe(current);
    expect(change.commands).toBeUndefined();
  });

  it('refuses while another transaction runs on the terminal', () => {
    const active = record({ external_id: 'other' });
    expect(refusal(() => decideCreate(purchase(), 'acct-1', env())(ctx({ active })))).toBe(
      'TERMINAL_BUSY',
    );
  });

  it('refuses at the unconfirmed limit', () => {
    expect(
      refusal(() => decideCreate(purchase(), 'acct-1', env())(ctx({ unconfirmedCount: 3 }))),
    ).toBe('TOO_MANY_UNCONFIRMED');
  });

  it("refuses another account's terminal, and a terminal that does not exist", () => {
    expect(refusal(() => decideCreate(purchase(), 'acct-2', env())(ctx()))).toBe(
      'TERMINAL_NOT_FOUND',
    );
    expect(
      refusal(() => decideCreate(purchase(), 'acct-1', env())(ctx({ terminalOwner: undefined }))),
    ).toBe('TERMINAL_NOT_FOUND');
  });

  it('asks the terminal to pause when the create asks for it', () => {
    const change = decideCreate(
      purchase({ options: { on_customer_identified: { pause: true } } }),
      'acct-1',
      env(),
    )(ctx());
    expect(change.commands?.[0]).toMatchObject({ pause_on_customer_identified: true });
  });
});

describe('referenced refunds', () => {
  const refund = (amount: number) => ({
    kind: 'REFUND' as const,
    request: {
      terminal_id: 't-1',
      external_id: 'refund-1',
      requested_amount: amount,
      currency: 'EUR',
      original_purchase_external_id: 'order-1',
    },
  });
  const original = record({
    state: 'CONFIRMED',
    result_code: 'SUCCESS',
    total_amount: 1100,
    cashback_amount: 100,
  });

  it('refund up to the purchase less cash back and earlier refunds', () => {
    const earlier = record({
      id: 'txn-r0',
      type: 'REFUND',
      state: 'COMMITTED',
      result_code: 'SUCCESS',
      total_amount: 300,
    });
    expect(refundableAmount(original, [earlier])).toBe(700);
    const change = decideCreate(
      refund(700),
      'acct-1',
      env(),
    )(ctx({ original: { record: original, refunds: [earlier] } }));
    expect(change.write?.txn).toMatchObject({
      type: 'REFUND',
      original_purchase_id: 'txn-a',
      original_purchase_external_id: 'order-1',
      original_purchase_terminal_id: 't-1',
      customer_not_present: false,
    });
    expect(change.write?.originalId).toBe('txn-a');
    expect(
      refusal(() =>
        decideCreate(
          refund(701),
          'acct-1',
          env(),
        )(ctx({ original: { record: original, refunds: [earlier] } })),
      ),
    ).toBe('REFUND_EXCEEDS_REFUNDABLE');
  });

  it('a running refund reserves its amount; a failed one does not', () => {
    const running = record({ id: 'r1', type: 'REFUND', requested_amount: 400 });
    const failed = record({ id: 'r2', type: 'REFUND', state: 'COMMITTED', result_code: 'ABORTED' });
    expect(refundableAmount(original, [running, failed])).toBe(600);
  });

  it('captured_amount, when the POS gave one, is what can be refunded', () => {
    expect(refundableAmount(record({ ...original.txn, captured_amount: 500 }), [])).toBe(500);
  });

  it('refuses an unknown, failed or unconfirmed original', () => {
    expect(
      refusal(() =>
        decideCreate(
          refund(1),
          'acct-1',
          env(),
        )(ctx({ original: { record: undefined, refunds: [] } })),
      ),
    ).toBe('ORIGINAL_PURCHASE_NOT_FOUND');
    for (const bad of [
      record({ state: 'COMMITTED', result_code: 'DECLINED_BY_ISSUER' }),
      record({ state: 'AWAITING_CONFIRM', result_code: 'SUCCESS' }),
    ]) {
      expect(
        refusal(() =>
          decideCreate(refund(1), 'acct-1', env())(ctx({ original: { record: bad, refunds: [] } })),
        ),
      ).toBe('ORIGINAL_PURCHASE_NOT_REFUNDABLE');
    }
    const foreign = { ...original, accountId: 'acct-2' };
    expect(
      refusal(() =>
        decideCreate(
          refund(1),
          'acct-1',
          env(),
        )(ctx({ original: { record: foreign, refunds: [] } })),
      ),
    ).toBe('ORIGINAL_PURCHASE_NOT_FOUND');
  });
});

describe('terminal reports', () => {
  const report = (phase: 'CUSTOMER_IDENTIFIED' | 'COMPLETED' | 'CANCELLED', extra = {}) => ({
    type: 'transaction' as const,
    transaction_id: 'txn-a',
    phase,
    ...extra,
  });

  it('PROCESSING → AWAITING_CONFIRM when the terminal finishes, with its result and details', () => {
    const change = decideReport(
      report('COMPLETED', { result_code: 'SUCCESS', details: { total_amount: 1000 } }),
      env(),
    )(ctx({ current: record({}) }));
    expect(change.write?.txn).toMatchObject({
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
      total_amount: 1000,
    });
    expect(change.write?.version).toBe(2);
  });

  it('PROCESSING → AWAITING_CONTINUE at the customer-identified point, with a pause deadline', () => {
    const identity = { tokenprovider_a: { card_token: '1234567812345678' } };
    const change = decideReport(
      report('CUSTOMER_IDENTIFIED', { details: { customer_identity: identity } }),
      env(),
    )(ctx({ current: record({}) }));
    expect(change.write?.txn).toMatchObject({
      state: 'AWAITING_CONTINUE',
      customer_identity: identity,
    });
    expect(change.write?.dueAt).toBe('2026-11-21T12:01:00.000Z');
  });

  it('a stale or repeated report changes nothing', () => {
    for (const state of ['AWAITING_CONFIRM', 'CONFIRMED', 'COMMITTED'] as const) {
      const current = record({ state, result_code: 'ABORTED' });
      expect(
        decideReport(report('COMPLETED', { result_code: 'SUCCESS' }), env())(ctx({ current }))
          .write,
      ).toBeUndefined();
    }
    const other = record({ id: 'txn-other' });
    expect(decideReport(report('COMPLETED'), env())(ctx({ current: other })).write).toBeUndefined();
  });

  it('a cancellation by the terminal ends the transaction as ABORTED', () => {
    const change = decideReport(report('CANCELLED'), env())(ctx({ current: record({}) }));
    expect(change.write?.txn).toMatchObject({ state: 'AWAITING_CONFIRM', result_code: 'ABORTED' });
  });
});

describe('continue', () => {
  const request = { terminal_id: 't-1', external_id: 'order-1' };

  it('AWAITING_CONTINUE → PROCESSING, with a new amount and merged metadata', () => {
    const current = record(
      { state: 'AWAITING_CONTINUE', metadata: { a: 1, b: 1 } },
      { dueAt: '2026-11-21T12:01:00.000Z' },
    );
    const change = decideContinue(
      { ...request, requested_amount: 1500, metadata: { b: 2 } },
      'acct-1',
      env(),
    )(ctx({ current }));
    expect(change.write?.txn).toMatchObject({
      state: 'PROCESSING',
      requested_amount: 1500,
      metadata: { a: 1, b: 2 },
    });
    expect(change.write?.dueAt).toBeUndefined();
    expect(change.commands?.[0]).toMatchObject({
      type: 'transaction.continue',
      requested_amount: 1500,
    });
  });

  it('merged metadata is held to the 16 KiB limit', () => {
    const current = record({ state: 'AWAITING_CONTINUE', metadata: { a: 'x'.repeat(10_000) } });
    const big = { b: 'y'.repeat(10_000) };
    expect(
      refusal(() =>
        decideContinue({ ...request, metadata: big }, 'acct-1', env())(ctx({ current })),
      ),
    ).toBe('INVALID_REQUEST');
  });

  it('only a transaction awaiting continue can be continued', () => {
    for (const state of ['PROCESSING', 'AWAITING_CONFIRM', 'CONFIRMED', 'COMMITTED'] as const) {
      expect(
        refusal(() =>
          decideContinue(request, 'acct-1', env())(ctx({ current: record({ state }) })),
        ),
      ).toBe('INVALID_STATE');
    }
    expect(refusal(() => decideContinue(request, 'acct-1', env())(ctx()))).toBe(
      'TRANSACTION_NOT_FOUND',
    );
  });

  it('AWAITING_CONTINUE → AWAITING_CONFIRM with ABORTED when not continued in time', () => {
    const current = record({ state: 'AWAITING_CONTINUE' }, { dueAt: '2026-11-21T12:01:00.000Z' });
    expect(decideDue('txn-a', env())(ctx({ current })).write).toBeUndefined();
    const late = new Date('2026-11-21T12:01:00.000Z');
    const change = decideDue('txn-a', env(late))(ctx({ current }));
    expect(change.write?.txn).toMatchObject({ state: 'AWAITING_CONFIRM', result_code: 'ABORTED' });
    expect(change.commands?.[0]).toMatchObject({ type: 'transaction.cancel' });
  });
});

describe('confirm', () => {
  const confirm = (result_code: string, extra = {}) => ({
    terminal_id: 't-1',
    external_id: 'order-1',
    result_code,
    ...extra,
  });
  const awaiting = record({
    state: 'AWAITING_CONFIRM',
    result_code: 'SUCCESS',
    total_amount: 1000,
  });

  it('AWAITING_CONFIRM + SUCCESS → CONFIRMED with confirmed_at and a grace deadline', () => {
    const change = decideConfirm(
      confirm('SUCCESS', { captured_amount: 900, metadata: { x: 1 } }),
      'acct-1',
      env(),
    )(ctx({ current: awaiting }));
    expect(change.write?.txn).toMatchObject({
      state: 'CONFIRMED',
      confirmed_at: NOW.toISOString(),
      captured_amount: 900,
      metadata: { x: 1 },
    });
    expect(change.write?.dueAt).toBe('2026-11-21T13:00:00.000Z');
    expect(change.commands).toBeUndefined();
  });

  it('commit_window_seconds sets the grace period; 0 commits at once', () => {
    const windowed = decideConfirm(
      confirm('SUCCESS', { commit_window_seconds: 60 }),
      'acct-1',
      env(),
    )(ctx({ current: awaiting }));
    expect(windowed.write?.dueAt).toBe('2026-11-21T12:01:00.000Z');
    const immediate = decideConfirm(
      confirm('SUCCESS', { commit_window_seconds: 0 }),
      'acct-1',
      env(),
    )(ctx({ current: awaiting }));
    expect(immediate.write?.txn.state).toBe('COMMITTED');
    expect(immediate.write?.dueAt).toBeUndefined();
  });

  it('captured_amount above the authorized amount is refused', () => {
    expect(
      refusal(() =>
        decideConfirm(
          confirm('SUCCESS', { captured_amount: 1001 }),
          'acct-1',
          env(),
        )(ctx({ current: awaiting })),
      ),
    ).toBe('INVALID_REQUEST');
  });

  it('only a transaction awaiting confirmation as success can be confirmed as success', () => {
    for (const current of [
      record({ state: 'PROCESSING' }),
      record({ state: 'AWAITING_CONTINUE' }),
      record({ state: 'AWAITING_CONFIRM', result_code: 'DECLINED_BY_ISSUER' }),
      record({ state: 'COMMITTED', result_code: 'ABORTED' }),
    ]) {
      expect(
        refusal(() => decideConfirm(confirm('SUCCESS'), 'acct-1', env())(ctx({ current }))),
      ).toBe('INVALID_STATE');
    }
    expect(refusal(() => decideConfirm(confirm('SUCCESS'), 'acct-1', env())(ctx()))).toBe(
      'TRANSACTION_NOT_FOUND',
    );
  });

  it('a repeated success confirm answers the current state', () => {
    for (const state of ['CONFIRMED', 'COMMITTED'] as const) {
      const current = record({ state, result_code: 'SUCCESS' });
      const change = decideConfirm(confirm('SUCCESS'), 'acct-1', env())(ctx({ current }));
      expect(change.write).toBeUndefined();
      expect(change.result).toBe(current);
    }
  });

  it('any state + failure → COMMITTED at once, and the terminal is told to stop or reverse', () => {
    for (const current of [
      record({ state: 'PROCESSING' }),
      record({ state: 'AWAITING_CONTINUE' }),
      awaiting,
      record({ state: 'CONFIRMED', result_code: 'SUCCESS' }, { dueAt: '2026-11-21T13:00:00.000Z' }),
    ]) {
      const change = decideConfirm(
        confirm('INSUFFICIENT_FUNDS', { result_description: 'Customer walked away' }),
        'acct-1',
        env(),
      )(ctx({ current }));
      expect(change.write?.txn).toMatchObject({
        state: 'COMMITTED',
        result_code: 'INSUFFICIENT_FUNDS',
        result_description: 'Customer walked away',
      });
      expect(change.write?.dueAt).toBeUndefined();
      expect(change.commands).toEqual([
        expect.objectContaining({ type: 'transaction.cancel', transaction_id: 'txn-a' }),
      ]);
    }
  });

  it('a failure on a result the terminal already reported as failed needs no command', () => {
    const current = record({ state: 'AWAITING_CONFIRM', result_code: 'DECLINED_BY_ISSUER' });
    const change = decideConfirm(confirm('DECLINED_BY_ISSUER'), 'acct-1', env())(ctx({ current }));
    expect(change.write?.txn.state).toBe('COMMITTED');
    expect(change.commands).toEqual([]);
  });

  it('CONFIRMED + failure after the grace period is refused; the grace timer commits it', () => {
    const current = record(
      { state: 'CONFIRMED', result_code: 'SUCCESS' },
      { dueAt: NOW.toISOString() },
    );
    expect(
      refusal(() => decideConfirm(confirm('ABORTED'), 'acct-1', env())(ctx({ current }))),
    ).toBe('INVALID_STATE');
    const change = decideDue('txn-a', env())(ctx({ current }));
    expect(change.write?.txn.state).toBe('COMMITTED');
    expect(change.write?.dueAt).toBeUndefined();
  });

  it('COMMITTED cannot change: a repeated failure answers it, a success-after-failure is refused', () => {
    const committedFailed = record({ state: 'COMMITTED', result_code: 'ABORTED' });
    expect(
      decideConfirm(confirm('ABORTED'), 'acct-1', env())(ctx({ current: committedFailed })).write,
    ).toBeUndefined();
    const committedOk = record({ state: 'COMMITTED', result_code: 'SUCCESS' });
    expect(
      refusal(() =>
        decideConfirm(confirm('ABORTED'), 'acct-1', env())(ctx({ current: committedOk })),
      ),
    ).toBe('INVALID_STATE');
  });

  it('(unknown transaction) + failure → a committed failed transaction of type UNKNOWN', () => {
    const change = decideConfirm(
      confirm('ABORTED', { metadata: { why: 'crash' } }),
      'acct-1',
      env(),
    )(ctx());
    expect(change.write?.txn).toMatchObject({
      type: 'UNKNOWN',
      state: 'COMMITTED',
      result_code: 'ABORTED',
      metadata: { why: 'crash' },
    });
    expect(change.commands).toBeUndefined();
  });
});
