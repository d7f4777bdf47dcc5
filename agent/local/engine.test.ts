/**
 * The local engine on a real journal file, the executor and a scripted reader: the state
 * machine's rows as the agent runs them for its own terminal, timers moved by hand.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../../common/testing/manual-timers.js';
import { ApiError } from '../../protocol/api-error.js';
import type { PurchaseRequest } from '../../protocol/api.js';
import { pairTransactionId } from '../../protocol/transaction-rules/pair-id.js';
import { Executor } from '../executor.js';
import { Journal } from '../journal.js';
import { ScriptedReader } from '../testing/scripted-reader.js';
import { LocalEngine } from './engine.js';

const TERMINAL = 't-1000000001';
const settings = {
  maxUnconfirmed: 2,
  startTtlMs: 30_000,
  pauseTimeoutMs: 60_000,
  gracePeriodMs: 600_000,
};

function setup(dataDir = mkdtempSync(path.join(tmpdir(), 'agent-local-'))) {
  const journal = Journal.open(dataDir);
  const reader = new ScriptedReader();
  const timers = new ManualTimers(new Date('2026-03-01T12:00:00.000Z'));
  const logger = pino({ level: 'silent' });
  const relayAcks: string[] = [];
  const executor = new Executor({
    journal,
    reader,
    clock: timers.clock,
    timers,
    logger,
    ack: (commandId) => relayAcks.push(commandId),
    reported: () => {},
  });
  const engine = new LocalEngine({
    terminalId: TERMINAL,
    journal,
    executor,
    clock: timers.clock,
    timers,
    logger,
    settings,
    reported: () => {},
  });
  engine.start();
  const close = async () => {
    engine.stop();
    await executor.stop();
    journal.close();
  };
  return { dataDir, journal, reader, timers, executor, engine, relayAcks, close };
}

const purchase = (externalId: string, extra: Partial<PurchaseRequest> = {}) => ({
  kind: 'PURCHASE' as const,
  request: {
    terminal_id: TERMINAL,
    external_id: externalId,
    requested_amount: 1000,
    currency: 'EUR',
    ...extra,
  },
});

function apiError(run: () => unknown): ApiError {
  try {
    run();
  } catch (error) {
    if (error instanceof ApiError) return error;
    throw error;
  }
  throw new Error('no error thrown');
}

describe('local engine', () => {
  it('creates under the pair id, journals the start, runs it once and confirms', async () => {
    const t = setup();
    const created = t.engine.create(purchase('order-1'));
    const id = pairTransactionId(TERMINAL, 'order-1');
    expect(created.txn).toMatchObject({ id, state: 'PROCESSING', requested_amount: 1000 });
    // The start is journaled with the record, as a relay's start would be.
    expect(t.journal.transaction(id)?.request).toMatchObject({ transaction_id: id });
    expect(t.journal.localTransaction(id)?.txn.state).toBe('PROCESSING');
    expect(t.relayAcks).toEqual([]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(t.reader.of('start').map((call) => call.request.transaction_id)).toEqual([id]);

    t.reader.emit('result', {
      transaction_id: id,
      phase: 'COMPLETED',
      result_code: 'SUCCESS',
      details: { total_amount: 1000 },
    });
    expect(t.engine.get(TERMINAL, 'order-1')?.txn).toMatchObject({
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
      total_amount: 1000,
    });
    expect(t.engine.unconfirmed().map((r) => r.txn.id)).toEqual([id]);

    const confirmed = t.engine.confirm({
      terminal_id: TERMINAL,
      external_id: 'order-1',
      result_code: 'SUCCESS',
    });
    expect(confirmed.txn.state).toBe('CONFIRMED');
    expect(t.engine.unconfirmed()).toEqual([]);
    t.timers.advance(settings.gracePeriodMs);
    expect(t.engine.get(TERMINAL, 'order-1')?.txn.state).toBe('COMMITTED');
    expect(t.reader.of('start')).toHaveLength(1);
    await t.close();
  });

  it('answers a repeated create with the same transaction, another amount with a mismatch', async () => {
    const t = setup();
    const first = t.engine.create(purchase('order-1'));
    expect(t.engine.create(purchase('order-1')).txn).toEqual(first.txn);
    expect(apiError(() => t.engine.create(purchase('order-1', { requested_amount: 5 }))).code).toBe(
      'IDEMPOTENCY_MISMATCH',
    );
    await new Promise((resolve) => setImmediate(resolve));
    expect(t.reader.of('start')).toHaveLength(1);
    await t.close();
  });

  it('answers another terminal as one that does not exist', async () => {
    const t = setup();
    const other = { ...purchase('order-1'), request: { ...purchase('order-1').request } };
    other.request.terminal_id = 't-2000000002';
    expect(apiError(() => t.engine.create(other)).code).toBe('TERMINAL_NOT_FOUND');
    expect(t.engine.get('t-2000000002', 'order-1')).toBeUndefined();
    await t.close();
  });

  it('refuses a second create while one runs, and beyond the unconfirmed limit', async () => {
    const t = setup();
    const a = t.engine.create(purchase('order-a'));
    expect(apiError(() => t.engine.create(purchase('order-b'))).code).toBe('TERMINAL_BUSY');
    t.reader.emit('result', {
      transaction_id: a.txn.id,
      phase: 'COMPLETED',
      result_code: 'SUCCESS',
    });
    const b = t.engine.create(purchase('order-b'));
    t.reader.emit('result', {
      transaction_id: b.txn.id,
      phase: 'COMPLETED',
      result_code: 'SUCCESS',
    });
    expect(apiError(() => t.engine.create(purchase('order-c'))).code).toBe('TOO_MANY_UNCONFIRMED');
    await t.close();
  });

  it('aborts a pause not continued in time, on its own timer, and cancels on the reader', async () => {
    const t = setup();
    const { txn } = t.engine.create(
      purchase('order-1', { options: { on_customer_identified: { pause: true } } }),
    );
    t.reader.emit('customer_identified', {
      transaction_id: txn.id,
      customer_identity: { tokenprovider_a: { card_token: '1234' } },
    });
    expect(t.engine.get(TERMINAL, 'order-1')?.txn.state).toBe('AWAITING_CONTINUE');
    await new Promise((resolve) => setImmediate(resolve));
    t.timers.advance(settings.pauseTimeoutMs);
    expect(t.engine.get(TERMINAL, 'order-1')?.txn).toMatchObject({
      state: 'AWAITING_CONFIRM',
      result_code: 'ABORTED',
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(t.reader.of('cancel')).toEqual([{ kind: 'cancel', transactionId: txn.id }]);
    await t.close();
  });

  it('continues a paused transaction with the new amount', async () => {
    const t = setup();
    const { txn } = t.engine.create(
      purchase('order-1', { options: { on_customer_identified: { pause: true } } }),
    );
    t.reader.emit('customer_identified', {
      transaction_id: txn.id,
      customer_identity: { tokenprovider_a: { card_token: '1234' } },
    });
    const continued = t.engine.continue({
      terminal_id: TERMINAL,
      external_id: 'order-1',
      requested_amount: 1200,
    });
    expect(continued.txn).toMatchObject({ state: 'PROCESSING', requested_amount: 1200 });
    await new Promise((resolve) => setImmediate(resolve));
    expect(t.reader.of('continue')).toEqual([
      { kind: 'continue', transactionId: txn.id, requestedAmount: 1200 },
    ]);
    await t.close();
  });

  it('keeps its records and their due times across a restart', async () => {
    const t = setup();
    const { txn } = t.engine.create(purchase('order-1'));
    t.reader.emit('result', { transaction_id: txn.id, phase: 'COMPLETED', result_code: 'SUCCESS' });
    t.engine.confirm({ terminal_id: TERMINAL, external_id: 'order-1', result_code: 'SUCCESS' });
    await t.close();

    const again = setup(t.dataDir);
    expect(again.engine.get(TERMINAL, 'order-1')?.txn.state).toBe('CONFIRMED');
    again.timers.advance(settings.gracePeriodMs);
    expect(again.engine.get(TERMINAL, 'order-1')?.txn.state).toBe('COMMITTED');
    await again.close();
  });

  it('reverses a success confirmed as failed within the grace period', async () => {
    const t = setup();
    const { txn } = t.engine.create(purchase('order-1'));
    t.reader.emit('result', { transaction_id: txn.id, phase: 'COMPLETED', result_code: 'SUCCESS' });
    t.engine.confirm({ terminal_id: TERMINAL, external_id: 'order-1', result_code: 'SUCCESS' });
    const failed = t.engine.confirm({
      terminal_id: TERMINAL,
      external_id: 'order-1',
      result_code: 'PRINTER_ERROR',
    });
    expect(failed.txn).toMatchObject({ state: 'COMMITTED', result_code: 'PRINTER_ERROR' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(t.reader.of('reverse')).toEqual([{ kind: 'reverse', transactionId: txn.id }]);
    await t.close();
  });
});

describe('local engine after a crash', () => {
  it('takes the outcome the reader’s record gives at recovery, in the record and for the relay', async () => {
    const first = setup();
    const { txn } = first.engine.create(purchase('order-1'));
    first.journal.close(); // the process dies here, the payment running on the reader

    const second = setup(first.dataDir);
    second.reader.record = {
      transaction_id: txn.id,
      phase: 'COMPLETED',
      result_code: 'SUCCESS',
      details: { total_amount: 1000 },
    };
    await second.executor.recover();
    expect(second.engine.get(TERMINAL, 'order-1')?.txn).toMatchObject({
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
    });
    const sent = second.journal.pendingReports().map((row) => row.report);
    expect(sent.map((r) => r.type === 'local_transaction' && r.transaction.state)).toEqual([
      'PROCESSING',
      'AWAITING_CONFIRM',
    ]);
    expect(second.reader.of('start')).toHaveLength(0);
    await second.close();
  });
});

describe('local engine started late', () => {
  it('gives a running record the outcome its reader row holds, once', async () => {
    const first = setup();
    const { txn } = first.engine.create(purchase('order-1'));
    first.engine.stop();
    first.journal.setReportRule(undefined); // as a journal written without local mode
    first.reader.emit('result', {
      transaction_id: txn.id,
      phase: 'COMPLETED',
      result_code: 'SUCCESS',
    });
    expect(first.journal.localTransaction(txn.id)?.txn.state).toBe('PROCESSING');
    await first.close();

    const second = setup(first.dataDir);
    expect(second.engine.get(TERMINAL, 'order-1')?.txn).toMatchObject({
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
    });
    await second.close();
    const third = setup(first.dataDir);
    const states = third.journal
      .pendingReports()
      .map((row) => row.report)
      .map((r) => r.type === 'local_transaction' && r.transaction.state);
    expect(states.filter((state) => state === 'AWAITING_CONFIRM')).toHaveLength(1);
    await third.close();
  });
});

describe('local engine stopping', () => {
  it('answers a create the stopped executor did not journal as not made', async () => {
    const t = setup();
    await t.executor.stop();
    expect(apiError(() => t.engine.create(purchase('order-1'))).code).toBe('SERVICE_BUSY');
    expect(t.engine.get(TERMINAL, 'order-1')).toBeUndefined();
    await t.close();
  });
});

describe('local refunds', () => {
  it('refund a purchase of the journal up to what it can give back, and no purchase it lacks', async () => {
    const t = setup();
    const { txn } = t.engine.create(purchase('order-1'));
    t.reader.emit('result', {
      transaction_id: txn.id,
      phase: 'COMPLETED',
      result_code: 'SUCCESS',
      details: { total_amount: 1000 },
    });
    t.engine.confirm({ terminal_id: TERMINAL, external_id: 'order-1', result_code: 'SUCCESS' });
    const refund = (externalId: string, original: string, amount: number) => ({
      kind: 'REFUND' as const,
      request: {
        terminal_id: TERMINAL,
        external_id: externalId,
        requested_amount: amount,
        currency: 'EUR',
        original_purchase_external_id: original,
      },
    });
    expect(apiError(() => t.engine.create(refund('refund-0', 'order-9', 100))).code).toBe(
      'ORIGINAL_PURCHASE_NOT_FOUND',
    );
    expect(apiError(() => t.engine.create(refund('refund-0', 'order-1', 1001))).code).toBe(
      'REFUND_EXCEEDS_REFUNDABLE',
    );
    const made = t.engine.create(refund('refund-1', 'order-1', 400));
    expect(made.txn).toMatchObject({ type: 'REFUND', original_purchase_id: txn.id });
    expect(t.engine.refundable(t.engine.get(TERMINAL, 'order-1')!)).toBe(600);
    await t.close();
  });
});

describe('local engine beside the relay', () => {
  it('does not run a pair the relay started on the reader, and the executor no relay start of a local pair', async () => {
    const t = setup();
    t.executor.handle({
      command: {
        type: 'transaction.start',
        command_id: 'cmd-relay-1',
        transaction_id: 'txn-RELAY1',
        external_id: 'order-cloud',
        kind: 'PURCHASE',
        requested_amount: 1000,
        currency: 'EUR',
        pause_on_customer_identified: false,
      },
    });
    t.reader.emit('result', {
      transaction_id: 'txn-RELAY1',
      phase: 'COMPLETED',
      result_code: 'SUCCESS',
    });
    expect(apiError(() => t.engine.create(purchase('order-cloud'))).code).toBe('INVALID_STATE');

    const local = t.engine.create(purchase('order-local'));
    t.executor.handle({
      command: {
        type: 'transaction.start',
        command_id: 'cmd-relay-2',
        transaction_id: 'txn-RELAY2',
        external_id: 'order-local',
        kind: 'PURCHASE',
        requested_amount: 1000,
        currency: 'EUR',
        pause_on_customer_identified: false,
      },
    });
    expect(t.relayAcks).toEqual(['cmd-relay-1', 'cmd-relay-2']);
    expect(t.journal.transaction('txn-RELAY2')).toBeUndefined();
    await new Promise((resolve) => setImmediate(resolve));
    expect(t.reader.of('start').map((call) => call.request.transaction_id)).toEqual([
      'txn-RELAY1',
      local.txn.id,
    ]);
    await t.close();
  });

  it("decides the relay's confirm as its own and answers it in a report; one past its expiry is refused unapplied", async () => {
    const t = setup();
    const id = pairTransactionId(TERMINAL, 'order-c');
    t.engine.create(purchase('order-c'));
    await new Promise((resolve) => setImmediate(resolve));
    t.reader.emit('result', {
      transaction_id: id,
      phase: 'COMPLETED',
      result_code: 'SUCCESS',
      details: { total_amount: 1000 },
    });
    const request = { terminal_id: TERMINAL, external_id: 'order-c', result_code: 'SUCCESS' };
    const now = t.timers.clock.now().getTime();
    const confirm = (commandId: string, resultCode: string, expiresAt: number) => ({
      command: {
        type: 'transaction.confirm' as const,
        command_id: commandId,
        transaction_id: id,
        request: { ...request, result_code: resultCode },
        expires_at: new Date(expiresAt).toISOString(),
      },
    });

    t.executor.handle(confirm('cmd-c1', 'SUCCESS', now + 10_000));
    expect(t.engine.get(TERMINAL, 'order-c')?.txn.state).toBe('CONFIRMED');
    const answer = t.journal
      .pendingReports()
      .map((row) => row.report)
      .find((report) => report.type === 'local_transaction' && report.answers !== undefined);
    expect(answer).toMatchObject({
      transaction: { id, state: 'CONFIRMED' },
      answers: { command_id: 'cmd-c1' },
    });

    // The POS was answered OUTCOME_UNKNOWN at expires_at; a late failure must not reverse.
    t.executor.handle(confirm('cmd-c2', 'PRINTER_ERROR', now - 1));
    expect(t.journal.command('cmd-c2')?.outcome).toBe('EXPIRED');
    expect(t.engine.get(TERMINAL, 'order-c')?.txn.state).toBe('CONFIRMED');
    expect(t.reader.of('reverse')).toEqual([]);

    // A relay's start for the pair it holds runs nothing and reports the record.
    const before = t.journal.pendingReports().length;
    t.executor.handle({
      command: {
        type: 'transaction.start',
        command_id: 'cmd-s',
        transaction_id: id,
        external_id: 'order-c',
        kind: 'PURCHASE',
        requested_amount: 1000,
        currency: 'EUR',
        pause_on_customer_identified: false,
      },
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(t.reader.of('start')).toHaveLength(1);
    expect(t.journal.pendingReports().at(-1)?.report).toMatchObject({
      type: 'local_transaction',
      transaction: { id, state: 'CONFIRMED' },
    });
    expect(t.journal.pendingReports().length).toBe(before + 1);
    expect(t.relayAcks).toEqual(['cmd-c1', 'cmd-c2', 'cmd-s']);
    await t.close();
  });
});
