import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { StartTransactionCommand, TerminalReport } from '../../protocol/index.js';
import { systemClock } from '../../common/clock.js';
import { SimulatedTerminal } from './simulated-terminal.js';

const APPROVED_AT_ONCE = 100002;

const start = (n: number): StartTransactionCommand => ({
  type: 'transaction.start',
  command_id: `cmd-${n}`,
  transaction_id: `txn-${n}`,
  external_id: `order-${n}`,
  kind: 'PURCHASE',
  requested_amount: APPROVED_AT_ONCE,
  currency: 'EUR',
  pause_on_customer_identified: false,
});

describe('a simulated terminal', () => {
  it('remembers its last 1,000 finished transactions: enough to reverse or answer again, not without end', async () => {
    const reports: TerminalReport[] = [];
    const terminal = new SimulatedTerminal({
      terminalId: 't-1',
      delayMs: 0,
      clock: systemClock,
      logger: pino({ level: 'silent' }),
      report: async (report) => {
        reports.push(report);
      },
    });
    // A start is acknowledged once the terminal has reported its result.
    for (let n = 1; n <= 1_050; n += 1) await terminal.handle(start(n));
    const outcomes = terminal.outcomes();
    expect(outcomes.size).toBe(1_000);
    expect(outcomes.has('txn-50')).toBe(false);
    expect(outcomes.get('txn-51')).toBe('CHARGED');

    // A start sent again for a remembered transaction is answered without a second charge.
    const completed = () => reports.filter((r) => r.type === 'transaction').length;
    const before = completed();
    await terminal.handle(start(1_050));
    expect(completed()).toBe(before);

    // A remembered payment is reversed.
    await terminal.handle({
      type: 'transaction.cancel',
      command_id: 'c-1',
      transaction_id: 'txn-1000',
    });
    expect(terminal.outcomes().get('txn-1000')).toBe('REVERSED');
    terminal.close();
  });

  it("follows the agent's command rules: an expired start and a start after its cancel never run", async () => {
    const reports: TerminalReport[] = [];
    const now = new Date('2026-11-24T12:00:00.000Z');
    const terminal = new SimulatedTerminal({
      terminalId: 't-1',
      delayMs: 0,
      clock: { now: () => now },
      logger: pino({ level: 'silent' }),
      report: async (report) => {
        reports.push(report);
      },
    });
    await terminal.handle({ ...start(1), expires_at: '2026-11-24T11:59:59.000Z' });
    expect(reports).toContainEqual(
      expect.objectContaining({
        transaction_id: 'txn-1',
        phase: 'CANCELLED',
        result_code: 'EXPIRED',
      }),
    );
    await terminal.handle({
      type: 'transaction.cancel',
      command_id: 'c-2',
      transaction_id: 'txn-2',
    });
    await terminal.handle(start(2));
    const charged = reports.filter(
      (r) => r.type === 'transaction' && r.phase === 'COMPLETED' && r.transaction_id === 'txn-2',
    );
    expect(charged).toEqual([]);
    expect(terminal.outcomes().get('txn-1')).toBe('STOPPED');
    expect(terminal.outcomes().get('txn-2')).toBe('STOPPED');
    terminal.close();
  });
});
