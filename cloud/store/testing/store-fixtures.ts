/** What the store conformance suites (<port>-conformance.ts) write and read. */
import type { TerminalCommand } from '../../../protocol/index.js';
import type { TerminalRecord, TransactionRecord } from '../records.js';
import type { Store } from '../store.js';

export const NOW = '2026-11-21T12:00:00.000Z';

export interface StoreFactory {
  /** A fresh, empty store. */
  open(): Promise<Store>;
  /** The same store again after close (a restart), when the implementation persists. */
  reopen?(store: Store): Promise<Store>;
  /**
   * Another handle on the same data, as a second relay process has it (the same file, the
   * same schema): the guarantees that must hold across processes are tested through it.
   */
  peer?(store: Store): Promise<Store>;
}

export function terminalRecord(id: string, accountId = 'acct-1'): TerminalRecord {
  return {
    id,
    accountId,
    kind: 'SIMULATOR',
    capabilities: { printer: true, battery: true },
    status: { terminal_id: id, updated_at: NOW, transaction_state: 'READY' },
    createdAt: NOW,
  };
}

export function transactionRecord(
  terminalId: string,
  externalId: string,
  id: string,
): TransactionRecord {
  return {
    txn: {
      id,
      terminal_id: terminalId,
      external_id: externalId,
      type: 'PURCHASE',
      state: 'PROCESSING',
      created_at: NOW,
      updated_at: NOW,
      requested_amount: 100,
      currency: 'EUR',
    },
    accountId: 'acct-1',
    version: 1,
  };
}

export const start = (commandId: string, transactionId: string): TerminalCommand => ({
  type: 'transaction.start',
  command_id: commandId,
  transaction_id: transactionId,
  external_id: 'x',
  kind: 'PURCHASE',
  requested_amount: 100,
  currency: 'EUR',
  pause_on_customer_identified: false,
});

export async function withTerminal(factory: StoreFactory, id = 't-1') {
  const store = await factory.open();
  await store.createAccount({ id: 'acct-1', kind: 'merchant', createdAt: NOW });
  await store.createTerminal(terminalRecord(id));
  return store;
}
