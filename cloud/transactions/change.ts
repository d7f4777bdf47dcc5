/**
 * A transaction's change as the relay's store commits it: the state machine's decision
 * (protocol/transaction-rules/) and the events that describe it, run against a consistent
 * snapshot and committed whole (see Store.changeTransaction). The store depends on these,
 * not the reverse.
 */
import type { ChangeContext, Decision } from '../../protocol/transaction-rules/decision.js';
import type { NewEvent } from '../store/records.js';

export type { ChangeContext };

export interface Change<R> extends Decision<R> {
  /** Events describing the change, appended to the log in the same commit. */
  events?: NewEvent[];
}

export type Decide<R> = (context: ChangeContext) => Change<R>;
