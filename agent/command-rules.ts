/**
 * What a terminal does with each of the relay's transaction commands, given what it knows
 * of the transaction. Pure decisions, kept apart from how they are carried out, so that
 * every terminal decides alike: the agent's executor (journal first, then the reader) and
 * the relay's lightweight in-process simulated terminals (cloud/simulator/), which play
 * the same rules without a journal (docs/simulator.md says why).
 */
import type { StartTransactionCommand } from '../protocol/terminal-link.js';
import type { TransactionState } from './journal.js';

/** What the terminal knows of a transaction: its state and whether it was charged. */
export interface KnownTransaction {
  state: TransactionState;
  /** A continue was accepted already. */
  continue_requested?: boolean;
  result?: { result_code?: string | undefined };
}

/**
 * `known`: the transaction was started (or cancelled) before, in any state: a transaction
 * never runs twice. `expired`: the start came after its `expires_at`: refused, so a relay
 * that never saw it acknowledged can count on it never running (invariant 3,
 * docs/architecture.md). `run`: start it.
 */
export type StartDecision = 'known' | 'expired' | 'run';

export function decideStart(
  known: KnownTransaction | undefined,
  command: Pick<StartTransactionCommand, 'expires_at'>,
  now: Date,
): StartDecision {
  if (known) return 'known';
  const expiresAt = command.expires_at;
  if (expiresAt !== undefined && Date.parse(expiresAt) < now.getTime()) return 'expired';
  return 'run';
}

/** A continue applies only to a transaction paused at customer identification, once. */
export function decideContinue(known: KnownTransaction | undefined): 'continue' | 'ignore' {
  return known?.state === 'PAUSED' && !known.continue_requested ? 'continue' : 'ignore';
}

/**
 * The relay said the transaction must not charge. `refuse-later`: never started: remember
 * it, so that a late start is refused. `drop`: queued, not yet at the reader: it ends
 * CANCELLED now. `stop`: the reader runs it (or waits at customer identification): stop it.
 * `reverse`: it succeeded: undo it. `nothing`: it ended without a charge already.
 */
export type CancelDecision = 'refuse-later' | 'drop' | 'stop' | 'reverse' | 'nothing';

export function decideCancel(known: KnownTransaction | undefined): CancelDecision {
  if (!known) return 'refuse-later';
  switch (known.state) {
    case 'QUEUED':
      return 'drop';
    case 'RUNNING':
    case 'PAUSED':
      return 'stop';
    case 'COMPLETED':
      return known.result?.result_code === 'SUCCESS' ? 'reverse' : 'nothing';
    case 'CANCELLED':
      return 'nothing';
  }
}
