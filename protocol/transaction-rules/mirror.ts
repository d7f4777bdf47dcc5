/**
 * The relay's side of local mode (docs/local-mode.md): the agent is the arbiter of its
 * terminal's transactions and reports each one whole; the relay keeps what it reports,
 * marked made locally, deciding nothing of its own (no due time: the agent's timers
 * decide). One pair is one transaction: a report naming a pair the relay holds under
 * another id is a mismatch, recorded and never a second transaction.
 */
import type { Transaction } from '../transaction.js';
import type { Decide, TransactionRecord } from './decision.js';

export interface MirrorResult {
  record: TransactionRecord | undefined;
  /** Why the report was not applied: the relay holds the pair as another transaction. */
  mismatch?: string;
}

export function decideMirror(reported: Transaction): Decide<MirrorResult> {
  return (ctx) => {
    if (ctx.terminalOwner === undefined) return { result: { record: undefined } };
    const current = ctx.current;
    // Marked made locally when the agent made it; a transaction the relay made and the
    // agent then decided (local mode's cloud path) stays the relay's. The agent's record of
    // a relay's start is the start's record, creation time included; a pair the agent made
    // itself before the relay's start reached it (rows 4 and 6) has the agent's own
    // creation time, and is the agent's whichever reached the relay first, the forward or
    // the POS's repeat on the cloud (otherwise the mark would follow the order of arrival).
    const { made_locally: _reportedMark, ...reportedTxn } = reported;
    const madeHere =
      current !== undefined &&
      current.txn.made_locally === undefined &&
      current.txn.created_at === reported.created_at;
    const txn: Transaction = madeHere ? reportedTxn : { ...reportedTxn, made_locally: true };
    if (!current) {
      const write: TransactionRecord = {
        txn,
        accountId: ctx.terminalOwner,
        ...(txn.original_purchase_id ? { originalId: txn.original_purchase_id } : {}),
        version: 1,
      };
      return { write, result: { record: write } };
    }
    if (current.txn.id !== txn.id) {
      const terms = (t: Transaction) =>
        `${t.type} ${t.requested_amount ?? '-'} ${t.currency ?? '-'}`;
      return {
        result: {
          record: current,
          mismatch: `the pair is ${current.txn.id} (${terms(current.txn)}) here, ${txn.id} (${terms(txn)}) on the terminal`,
        },
      };
    }
    const { dueAt: _relayDue, ...kept } = current;
    const write: TransactionRecord = { ...kept, txn, version: current.version + 1 };
    return { write, result: { record: write } };
  };
}
