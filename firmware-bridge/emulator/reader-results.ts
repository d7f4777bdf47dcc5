/**
 * The results the emulated reader gives when the host stops a transaction, or asks about
 * one it cannot run. Every one is phase CANCELLED: the reader will not charge. The outcomes
 * of the transactions themselves (trigger amounts) are in scenarios.ts.
 * docs/serial-protocol.md lists them; a test checks that the list there is complete.
 */
export type ReaderStop = 'cancel' | 'reverse';

export interface ReaderOutcome {
  phase: 'CANCELLED';
  result_code: string;
  result_description: string;
}

const cancelled = (result_code: string, result_description: string): ReaderOutcome => ({
  phase: 'CANCELLED',
  result_code,
  result_description,
});

export const READER_RESULTS = {
  /** `transaction.cancel` or `transaction.reverse` while running or paused. */
  cancelled: cancelled('ABORTED', 'Cancelled by the register'),
  /** `transaction.reverse` after SUCCESS: the payment is undone. */
  reversed: cancelled('REVERSED', 'Reversed by the register; nothing is charged'),
  /** Found running in the memory at power-on: it stopped with the power, uncharged. */
  interrupted: cancelled('ABORTED', 'Interrupted: the reader restarted before it finished'),
  /** continue, cancel or reverse for a transaction_id the reader never saw. */
  unknown: cancelled('ABORTED', 'The reader has no record of this transaction'),
  /** A start while another transaction runs or waits at the pause. */
  busy: cancelled('READER_BUSY', 'The reader is busy with another transaction'),
} as const satisfies Record<string, ReaderOutcome>;
