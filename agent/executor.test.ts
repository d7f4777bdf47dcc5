import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../common/testing/manual-timers.js';
import type { CommandMessage } from '../protocol/mqtt.js';
import type { TerminalTransactionState } from '../protocol/terminal-status.js';
import { Executor } from './executor.js';
import { Journal } from './journal.js';
import type { PrinterPort } from './ports.js';
import { ScriptedReader } from './testing/scripted-reader.js';

const settle = () => new Promise((resolve) => setImmediate(resolve));

function setup(options: { dataDir?: string; printer?: PrinterPort } = {}) {
  const dataDir = options.dataDir ?? mkdtempSync(path.join(tmpdir(), 'agent-executor-'));
  const journal = Journal.open(dataDir);
  const reader = new ScriptedReader();
  const timers = new ManualTimers();
  const acks: Array<[string, string]> = [];
  const states: TerminalTransactionState[] = [];
  const clock = { now: () => new Date('2026-03-01T12:00:00.000Z') };
  const executor = new Executor({
    journal,
    reader,
    clock,
    timers,
    logger: pino({ level: 'silent' }),
    ack: (commandId, outcome) => acks.push([commandId, outcome]),
    reported: () => {},
    ...(options.printer ? { printer: options.printer } : {}),
  });
  executor.on('state', (state) => states.push(state));
  const reports = () =>
    journal
      .pendingReports()
      .map((row) => row.report)
      .filter((report) => report.type === 'transaction');
  return { dataDir, journal, reader, timers, acks, states, executor, reports };
}

function start(id: string, commandId = `start-${id}`, extra: object = {}): CommandMessage {
  return {
    command: {
      type: 'transaction.start',
      command_id: commandId,
      transaction_id: id,
      external_id: `order-${id}`,
      kind: 'PURCHASE',
      requested_amount: 1000,
      currency: 'EUR',
      pause_on_customer_identified: false,
      ...extra,
    },
  };
}
const cancel = (id: string, commandId = `cancel-${id}`): CommandMessage => ({
  command: { type: 'transaction.cancel', command_id: commandId, transaction_id: id },
});
const success = (id: string) => ({
  transaction_id: id,
  phase: 'COMPLETED' as const,
  result_code: 'SUCCESS',
});

describe('executor', () => {
  it('journals a command, then acknowledges it, then drives the reader', async () => {
    const t = setup();
    let seenAtAck: unknown;
    t.acks.push = (...items) => {
      seenAtAck = { command: t.journal.command('start-tx1'), starts: t.reader.of('start').length };
      return Array.prototype.push.apply(t.acks, items);
    };
    t.executor.handle(start('tx1'));
    expect(seenAtAck).toEqual({
      command: {
        command_id: 'start-tx1',
        type: 'transaction.start',
        transaction_id: 'tx1',
        outcome: 'ACCEPTED',
      },
      starts: 0,
    });
    expect(t.reader.of('start')).toHaveLength(1);
    expect(t.reader.of('start')[0]!.request).toEqual({
      transaction_id: 'tx1',
      kind: 'PURCHASE',
      requested_amount: 1000,
      currency: 'EUR',
      pause_on_customer_identified: false,
    });
    expect(t.journal.transaction('tx1')?.state).toBe('RUNNING');
    t.reader.emit('result', success('tx1'));
    expect(t.reports()).toEqual([{ type: 'transaction', ...success('tx1') }]);
    expect(t.states).toEqual(['PROCESSING', 'READY']);
  });

  it('never runs a transaction twice: re-sent or new command ids', async () => {
    const t = setup();
    t.executor.handle(start('tx1'));
    t.executor.handle(start('tx1'));
    t.executor.handle(start('tx1', 'another-id'));
    t.reader.emit('result', success('tx1'));
    t.executor.handle(start('tx1', 'third-id'));
    expect(t.reader.of('start')).toHaveLength(1);
    expect(t.acks).toEqual([
      ['start-tx1', 'ACCEPTED'],
      ['start-tx1', 'ACCEPTED'],
      ['another-id', 'ACCEPTED'],
      ['third-id', 'ACCEPTED'],
    ]);
    expect(t.reports()).toHaveLength(1);
  });

  it('refuses an expired start for good, and reports it CANCELLED with EXPIRED', () => {
    const t = setup();
    t.executor.handle(start('tx1', 's1', { expires_at: '2026-03-01T11:59:59.999Z' }));
    t.executor.handle(start('tx1', 's2', { expires_at: '2026-03-01T12:05:00.000Z' }));
    expect(t.acks).toEqual([
      ['s1', 'EXPIRED'],
      ['s2', 'ACCEPTED'],
    ]);
    expect(t.reader.of('start')).toHaveLength(0);
    expect(t.reports()).toEqual([
      {
        type: 'transaction',
        transaction_id: 'tx1',
        phase: 'CANCELLED',
        result_code: 'EXPIRED',
        result_description: 'The start reached the terminal after it expired',
      },
    ]);
    t.executor.handle(start('tx2', 's3', { expires_at: '2026-03-01T12:00:00.000Z' }));
    expect(t.reader.of('start')).toHaveLength(1);
  });

  it('pauses at customer identification and continues with the new amount', () => {
    const t = setup();
    t.executor.handle(start('tx1', 's1', { pause_on_customer_identified: true }));
    const identity = { tokenprovider_a: { card_token: '1234' } };
    t.reader.emit('customer_identified', { transaction_id: 'tx1', customer_identity: identity });
    expect(t.executor.transactionState).toBe('AWAITING_CONTINUE');
    t.executor.handle({
      command: {
        type: 'transaction.continue',
        command_id: 'k1',
        transaction_id: 'tx1',
        requested_amount: 1200,
      },
    });
    t.executor.handle({
      command: { type: 'transaction.continue', command_id: 'k2', transaction_id: 'tx1' },
    });
    expect(t.reader.of('continue')).toEqual([
      { kind: 'continue', transactionId: 'tx1', requestedAmount: 1200 },
    ]);
    t.reader.emit('result', success('tx1'));
    expect(t.reports().map((r) => r.type === 'transaction' && r.phase)).toEqual([
      'CUSTOMER_IDENTIFIED',
      'COMPLETED',
    ]);
    expect(t.reports()[0]).toMatchObject({ details: { customer_identity: identity } });
    expect(t.states).toEqual(['PROCESSING', 'AWAITING_CONTINUE', 'PROCESSING', 'READY']);
  });

  it('cancel: stops a running one, drops a queued one, refuses a later start of an unknown one', () => {
    const t = setup();
    t.executor.handle(start('tx1'));
    t.executor.handle(start('tx2'));
    t.executor.handle(cancel('tx2'));
    t.executor.handle(cancel('tx1'));
    t.executor.handle(cancel('tx3'));
    expect(t.reader.of('cancel')).toEqual([{ kind: 'cancel', transactionId: 'tx1' }]);
    t.reader.emit('result', { transaction_id: 'tx1', phase: 'CANCELLED', result_code: 'ABORTED' });
    t.executor.handle(start('tx3'));
    expect(t.reader.of('start').map((c) => c.request.transaction_id)).toEqual(['tx1']);
    expect(t.reports()).toEqual([
      expect.objectContaining({
        transaction_id: 'tx2',
        phase: 'CANCELLED',
        result_code: 'ABORTED',
      }),
      expect.objectContaining({
        transaction_id: 'tx1',
        phase: 'CANCELLED',
        result_code: 'ABORTED',
      }),
    ]);
    expect(t.acks.every(([, outcome]) => outcome === 'ACCEPTED')).toBe(true);
  });

  it('cancel after success reverses, after the reader is free; a too-late cancel too', () => {
    const t = setup();
    t.executor.handle(start('tx1'));
    t.reader.emit('result', success('tx1'));
    t.executor.handle(start('tx2'));
    t.executor.handle(cancel('tx1'));
    t.executor.handle(cancel('tx2'));
    expect(t.reader.of('reverse')).toHaveLength(0); // tx2 holds the reader
    t.reader.emit('result', success('tx2')); // too late to stop: it completed
    expect(t.reader.of('reverse').map((c) => c.transactionId)).toEqual(['tx1']);
    t.reader.emit('result', { transaction_id: 'tx1', phase: 'CANCELLED', result_code: 'REVERSED' });
    expect(t.reader.of('reverse').map((c) => c.transactionId)).toEqual(['tx1', 'tx2']);
    t.reader.emit('result', { transaction_id: 'tx2', phase: 'CANCELLED', result_code: 'REVERSED' });
    expect(
      t
        .reports()
        .map((r) => r.type === 'transaction' && `${r.transaction_id} ${r.phase} ${r.result_code}`),
    ).toEqual([
      'tx1 COMPLETED SUCCESS',
      'tx2 COMPLETED SUCCESS',
      'tx1 CANCELLED REVERSED',
      'tx2 CANCELLED REVERSED',
    ]);
    expect(t.journal.openTransactions()).toEqual([]);
  });

  it('asks the reader record after a failed start: never ran means CANCELLED', async () => {
    const t = setup();
    t.reader.fail.set('start', 1);
    t.reader.record = success('older');
    t.executor.handle(start('tx1'));
    await settle();
    expect(t.reports()).toEqual([]);
    t.timers.fireNext(); // the back-off before asking
    await settle();
    expect(t.reader.of('lastTransaction')).toHaveLength(1);
    expect(t.reports()).toEqual([
      expect.objectContaining({
        transaction_id: 'tx1',
        phase: 'CANCELLED',
        result_code: 'ABORTED',
      }),
    ]);
  });

  it('keeps asking while the reader does not answer, then adopts its record', async () => {
    const t = setup();
    t.reader.fail.set('start', 1);
    t.reader.fail.set('lastTransaction', 2);
    t.reader.record = { transaction_id: 'tx1', phase: 'IN_PROGRESS' };
    t.executor.handle(start('tx1'));
    for (let i = 0; i < 3; i++) {
      await settle();
      t.timers.fireNext();
    }
    await settle();
    expect(t.reader.of('lastTransaction')).toHaveLength(3);
    expect(t.executor.transactionState).toBe('PROCESSING');
    t.reader.emit('result', success('tx1'));
    expect(t.reports()).toEqual([
      expect.objectContaining({ transaction_id: 'tx1', phase: 'COMPLETED' }),
    ]);
  });

  it('recovers after a crash: the reader record decides, a lost continue is sent again', async () => {
    const first = setup();
    first.executor.handle(start('tx1', 's1', { pause_on_customer_identified: true }));
    first.reader.emit('customer_identified', { transaction_id: 'tx1', customer_identity: {} });
    first.reader.fail.set('continue', 1);
    first.executor.handle({
      command: {
        type: 'transaction.continue',
        command_id: 'k1',
        transaction_id: 'tx1',
        requested_amount: 900,
      },
    });
    first.executor.handle(start('tx2'));
    first.journal.close(); // the process dies here

    const second = setup({ dataDir: first.dataDir });
    second.reader.record = { transaction_id: 'tx1', phase: 'CUSTOMER_IDENTIFIED' };
    await second.executor.recover();
    expect(second.reader.of('continue')).toEqual([
      { kind: 'continue', transactionId: 'tx1', requestedAmount: 900 },
    ]);
    expect(second.reports().filter((r) => r.transaction_id === 'tx2')).toEqual([
      expect.objectContaining({ phase: 'CANCELLED', result_code: 'ABORTED' }),
    ]);
    second.reader.emit('result', success('tx1'));
    expect(second.journal.openTransactions()).toEqual([]);
    expect(second.reader.of('start')).toHaveLength(0);
  });

  it('a print failure is logged, never thrown; without a printer the job is dropped', async () => {
    const printed: number[] = [];
    const printer: PrinterPort = {
      print: async (png) => {
        printed.push(png.length);
        if (printed.length === 1)
          throw Object.assign(new Error('paper out'), { code: 'PAPER_OUT' });
      },
      close: async () => {},
    };
    const t = setup({ printer });
    const print = (id: string): CommandMessage => ({
      command: {
        type: 'print',
        command_id: id,
        format: 'PNG',
        contents: Buffer.from('png!').toString('base64'),
      },
    });
    t.executor.handle(print('p1'));
    t.executor.handle(print('p2'));
    t.executor.handle(print('p1'));
    await t.executor.stop();
    expect(printed).toEqual([4, 4]);
    expect(t.acks.map(([id]) => id)).toEqual(['p1', 'p2', 'p1']);
    const bare = setup();
    bare.executor.handle(print('p3'));
    expect(bare.acks).toEqual([['p3', 'ACCEPTED']]);
  });
});

describe('executor: end-of-day and payments', () => {
  it('gives the reader to an end-of-day only between payments, and holds queued payments for it', async () => {
    const t = setup();
    t.executor.handle(start('tx1'));
    t.executor.handle(start('tx2'));
    await settle();
    expect(t.reader.of('start').map((c) => c.request.transaction_id)).toEqual(['tx1']);
    // The terminal asks for an end-of-day while tx1 runs: not now.
    expect(t.executor.claimEndOfDay()).toBe(false);
    t.reader.emit('result', success('tx1'));
    await settle();
    // tx1 is over; tx2 waits for the end-of-day, which takes the reader.
    expect(t.reader.of('start')).toHaveLength(1);
    expect(t.executor.claimEndOfDay()).toBe(true);
    expect(t.executor.transactionState).toBe('BUSY');
    t.executor.handle(start('tx3'));
    await settle();
    expect(t.reader.of('start')).toHaveLength(1);
    t.executor.releaseEndOfDay();
    await settle();
    expect(t.reader.of('start').map((c) => c.request.transaction_id)).toEqual(['tx1', 'tx2']);
    await t.executor.stop();
  });

  it('journals and acknowledges an end-of-day command before asking for it, once', () => {
    let asked = 0;
    const dataDir = mkdtempSync(path.join(tmpdir(), 'agent-executor-'));
    const journal = Journal.open(dataDir);
    const acks: Array<[string, string]> = [];
    const executor = new Executor({
      journal,
      reader: new ScriptedReader(),
      clock: { now: () => new Date('2026-03-01T12:00:00.000Z') },
      timers: new ManualTimers(),
      logger: pino({ level: 'silent' }),
      ack: (commandId, outcome) => acks.push([commandId, outcome]),
      reported: () => {},
      onEndOfDay: () => {
        asked += 1;
        expect(journal.command('eod-1')).toMatchObject({ type: 'terminal.end_of_day' });
        expect(acks).toEqual([['eod-1', 'ACCEPTED']]);
      },
    });
    const command: CommandMessage = {
      command: { type: 'terminal.end_of_day', command_id: 'eod-1' },
    };
    executor.handle(command);
    executor.handle(command);
    expect(asked).toBe(1);
    expect(acks).toEqual([
      ['eod-1', 'ACCEPTED'],
      ['eod-1', 'ACCEPTED'],
    ]);
  });
});
