/**
 * What a decision of the state machine (state-machine.ts) sees and what it answers: the
 * shape of a transaction's change, which the store runs against a consistent snapshot
 * and commits whole (see Store.changeTransaction). The store depends on these, not the
 * reverse.
 */
import type { TerminalCommand } from '../../protocol/index.js';
import type { NewEvent, TransactionRecord } from '../store/records.js';

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

export interface Change<R> {
  /** The record to insert or replace; omitted when nothing changes. */
  write?: TransactionRecord;
  /** Commands for the terminal, queued in the same commit. */
  commands?: TerminalCommand[];
  /** Events describing the change, appended to the log in the same commit. */
  events?: NewEvent[];
  result: R;
}

export type Decide<R> = (context: ChangeContext) => Change<R>;
