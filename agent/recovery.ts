/**
 * Reconciliation with the card reader's own record: what the agent does about a
 * transaction it journaled but does not know to be final, once the reader has said what
 * its last transaction was. Used at start for every open transaction (after a crash or a
 * power loss), after any failed reader command (delivery unknown), and as a watchdog
 * while a transaction runs (an event lost with the serial link).
 *
 * The reader's record is the truth: invariant 4 (docs/architecture.md). The firmware writes it
 * durably before it acknowledges a start, so a transaction that is not the reader's last
 * one never reached it: it never ran and never will (the agent refuses it from now on).
 *
 * | journal                     | reader's last transaction is it, phase  | decision                        |
 * | --------------------------- | --------------------------------------- | ------------------------------- |
 * | COMPLETED, reversal owed    | CANCELLED                               | reversed: report CANCELLED      |
 * | COMPLETED, reversal owed    | anything else                           | send the reverse (again)        |
 * | CANCELLED                   | COMPLETED with SUCCESS                  | charged after all: reverse it   |
 * | other final                 | —                                       | nothing                         |
 * | QUEUED / RUNNING / PAUSED   | not it (another, or none)               | never ran: report CANCELLED     |
 * | RUNNING / PAUSED            | IN_PROGRESS                             | wait (cancel if owed)           |
 * | RUNNING / PAUSED            | CUSTOMER_IDENTIFIED                     | cancel if owed, else resend the |
 * |                             |                                         | continue if one was accepted,   |
 * |                             |                                         | else paused (report it once)    |
 * | RUNNING / PAUSED            | COMPLETED / CANCELLED                   | final: report it (reverse a     |
 * |                             |                                         | success if a cancel is owed)    |
 */
import type { TransactionRow } from './journal.js';
import type { ReaderRecord, ReaderResult } from './ports.js';

export type Outcome = Omit<ReaderResult, 'transaction_id' | 'phase'>;

export type Reconciliation =
  | { action: 'none' }
  | { action: 'never-ran' }
  | { action: 'running'; cancel: boolean }
  | { action: 'paused'; report: boolean; cancel: boolean; record: ReaderRecord }
  | { action: 'resend-continue' }
  | { action: 'final'; phase: 'COMPLETED' | 'CANCELLED'; outcome: Outcome; reverse: boolean }
  | { action: 'reverse' }
  | { action: 'reversed'; outcome: Outcome }
  | { action: 'charged-after-cancel'; outcome: Outcome };

export interface ReconcileContext {
  /** The reader acknowledged this transaction's start in this process's life. */
  startDelivered: boolean;
}

export function reverseOwed(row: TransactionRow): boolean {
  return row.state === 'COMPLETED' && row.cancel_requested && row.result?.result_code === 'SUCCESS';
}

export function isOpen(row: TransactionRow): boolean {
  return row.state === 'QUEUED' || row.state === 'RUNNING' || row.state === 'PAUSED';
}

export function reconcile(
  row: TransactionRow,
  record: ReaderRecord | null,
  context: ReconcileContext,
): Reconciliation {
  const mine = record?.transaction_id === row.transaction_id ? record : undefined;
  if (reverseOwed(row)) {
    return mine?.phase === 'CANCELLED'
      ? { action: 'reversed', outcome: outcomeOf(mine) }
      : { action: 'reverse' };
  }
  if (!isOpen(row)) {
    return row.state === 'CANCELLED' &&
      mine?.phase === 'COMPLETED' &&
      mine.result_code === 'SUCCESS'
      ? { action: 'charged-after-cancel', outcome: outcomeOf(mine) }
      : { action: 'none' };
  }
  if (!mine) {
    // A reader that took the start and then does not know it broke its contract: never
    // claim "will not charge" then; keep asking.
    return context.startDelivered && row.state === 'RUNNING'
      ? { action: 'running', cancel: row.cancel_requested }
      : { action: 'never-ran' };
  }
  switch (mine.phase) {
    case 'IN_PROGRESS':
      return { action: 'running', cancel: row.cancel_requested };
    case 'CUSTOMER_IDENTIFIED':
      if (row.cancel_requested)
        return { action: 'paused', report: false, cancel: true, record: mine };
      if (row.continue_requested) return { action: 'resend-continue' };
      return { action: 'paused', report: row.state !== 'PAUSED', cancel: false, record: mine };
    case 'COMPLETED':
    case 'CANCELLED':
      return {
        action: 'final',
        phase: mine.phase,
        outcome: outcomeOf(mine),
        reverse:
          mine.phase === 'COMPLETED' && mine.result_code === 'SUCCESS' && row.cancel_requested,
      };
  }
}

function outcomeOf(record: ReaderRecord): Outcome {
  const outcome: Outcome = { result_code: record.result_code ?? 'UNKNOWN_RESULT' };
  if (record.result_description !== undefined)
    outcome.result_description = record.result_description;
  if (record.details !== undefined) outcome.details = record.details;
  return outcome;
}
