import { describe, expect, it } from 'vitest';
import type { TerminalCommand } from '../../protocol/index.js';
import type { TransactionRecord } from '../store/records.js';
import { supersededCommands } from './superseded.js';

const states: Record<string, string> = {
  'txn-running': 'PROCESSING',
  'txn-done': 'AWAITING_CONFIRM',
};
const superseded = supersededCommands({
  getTransactionById: async (id) =>
    states[id] ? ({ txn: { id, state: states[id] } } as unknown as TransactionRecord) : undefined,
});
const command = (type: TerminalCommand['type'], transactionId: string) =>
  ({ type, command_id: `c-${type}`, transaction_id: transactionId }) as TerminalCommand;

describe('supersededCommands', () => {
  it('retires a start or continue whose transaction has left PROCESSING (or is gone)', async () => {
    expect(await superseded(command('transaction.start', 'txn-done'))).toBe(true);
    expect(await superseded(command('transaction.continue', 'txn-done'))).toBe(true);
    expect(await superseded(command('transaction.start', 'txn-unknown'))).toBe(true);
  });

  it('sends again a start or continue still in PROCESSING, and every cancel or print', async () => {
    expect(await superseded(command('transaction.start', 'txn-running'))).toBe(false);
    expect(await superseded(command('transaction.continue', 'txn-running'))).toBe(false);
    expect(await superseded(command('transaction.cancel', 'txn-done'))).toBe(false);
    expect(
      await superseded({ type: 'print', command_id: 'c-p', format: 'PNG', contents: 'AA==' }),
    ).toBe(false);
  });
});
