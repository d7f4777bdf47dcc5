/**
 * The store's transactions and the commands sent to terminals (the outbox). Every
 * money-state change goes through `changeTransaction`, which runs a synchronous decision
 * against a consistent snapshot and writes its result atomically, together with the
 * commands it sends to the terminal.
 */
import type { TerminalCommand } from '../../../protocol/index.js';
import type { ReportPosition } from '../../delivery/report-order.js';
import type { Decide } from '../../transactions/change.js';
import type { PendingCommand, TransactionQuery, TransactionRecord } from '../records.js';

/** The key of a change and what else its decision needs to see. */
export interface ChangeKey {
  terminalId: string;
  externalId: string;
  /** A create also sees the terminal's active transaction and its unconfirmed count. */
  forCreate?: boolean;
  /** A referenced refund also sees its original purchase and the refunds made against it. */
  original?: { terminalId: string; externalId: string };
  /** The change applies an agent's report: applied once, in order, in the same commit. */
  report?: ReportPosition;
}

export interface TransactionStore {
  getTransaction(terminalId: string, externalId: string): Promise<TransactionRecord | undefined>;
  getTransactionById(id: string): Promise<TransactionRecord | undefined>;
  listUnconfirmed(terminalId: string): Promise<TransactionRecord[]>;
  listRefunds(originalId: string): Promise<TransactionRecord[]>;
  /** An account's transactions matching the query, newest first, at most `limit`. */
  searchTransactions(query: TransactionQuery): Promise<TransactionRecord[]>;
  /** Transactions with something due by `until` (grace-period commit, pause time-out), earliest first. */
  listDue(until: string, limit: number): Promise<TransactionRecord[]>;
  /** The earliest deadline of any transaction, if one has any. */
  nextDueAt(): Promise<string | undefined>;
  /**
   * Throws ReportOutOfOrder, deciding nothing, when `key.report` is not next in line.
   *
   * Commits across ports in one transaction: the transaction, the commands it sends, its
   * events (the event log) and, with `key.report`, the terminal's report position. A
   * command sent for a state never written, an event told of one, or a report applied
   * twice after a crash would each break a money rule.
   */
  changeTransaction<R>(key: ChangeKey, decide: Decide<R>): Promise<R>;

  /** Queues a command that belongs to no transaction (a print job). */
  queueCommand(terminalId: string, command: TerminalCommand): Promise<void>;
  /** Commands not yet acknowledged by their terminal, oldest first. */
  pendingCommands(): Promise<PendingCommand[]>;
  /**
   * Marks the terminal's command delivered. A command of another terminal is left alone:
   * an agent acknowledges only what was sent to it.
   */
  ackCommand(terminalId: string, commandId: string, at: string): Promise<void>;
}
