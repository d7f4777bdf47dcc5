/**
 * What a decision of the transaction state machine (state-machine.ts) sees and what it
 * answers. The relay runs it inside its store's change over a consistent snapshot; the
 * agent, for its own terminal in local mode, over its journal. Both commit the answer
 * whole, so a commit is the only way money state moves.
 */
import type { TerminalCommand } from '../terminal-link.js';
import type { Transaction } from '../transaction.js';

export interface TransactionRecord {
  /** The transaction as the current revision shows it; the single source of truth. */
  txn: Transaction;
  /** The owner of the terminal; the agent names its own terminal's owner one fixed way. */
  accountId: string;
  /** Internal id of the original purchase, for a referenced refund. */
  originalId?: string;
  /**
   * When the owner of the record acts on its own: a CONFIRMED transaction commits, a
   * paused one is aborted. Absent when nothing is due.
   */
  dueAt?: string;
  /** Bumped on every write; lets readers and notifications order snapshots. */
  version: number;
}

export interface ChangeContext {
  /** The account the terminal belongs to; undefined when there is no such terminal. */
  terminalOwner: string | undefined;
  current: TransactionRecord | undefined;
  /** A transaction of the same terminal still in PROCESSING or AWAITING_CONTINUE (forCreate). */
  active: TransactionRecord | undefined;
  /** Transactions of the terminal not yet CONFIRMED or COMMITTED (forCreate; else 0). */
  unconfirmedCount: number;
  original?: { record: TransactionRecord | undefined; refunds: TransactionRecord[] };
}

export interface Decision<R> {
  /** The record to insert or replace; omitted when nothing changes. */
  write?: TransactionRecord;
  /** Commands for the terminal, in the same commit. */
  commands?: TerminalCommand[];
  result: R;
}

export type Decide<R> = (context: ChangeContext) => Decision<R>;
