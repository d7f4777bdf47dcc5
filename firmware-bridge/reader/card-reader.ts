/**
 * The card reader as the agent sees it: a small interface over the serial messages of
 * docs/serial-protocol.md. `SerialCardReader` implements it over a `SerialLink<'host'>`;
 * tests and simulators use the same driver against the emulated firmware, and
 * `TEST_READER_PORT` points it at a real reader.
 *
 * Every method rejects with a `SerialLinkError`: branch on `code` or `disconnected`,
 * never on the message. A command that fails with `disconnected: true` may or may not have
 * reached the reader: reconcile with `lastTransaction()` before trying anything else.
 */
import type { z } from 'zod';
import type { ReaderCapabilities } from '../../protocol/reader-capabilities.js';
import type {
  CustomerIdentified,
  LastTransactionRecord,
  StartTransaction,
  StatusReport,
  TransactionProgress,
  TransactionResult,
} from '../serial/messages.js';
import type { SerialLinkError } from '../serial/errors.js';

type Body<T> = Omit<T, 'v' | 'type'>;

/** What `start()` sends: the `transaction.start` message without its envelope. */
export type ReaderStart = Body<z.infer<typeof StartTransaction>>;

/** `transaction.progress`: the reader works on it; `screen_text` is what it shows. */
export type ReaderProgress = Body<z.infer<typeof TransactionProgress>>;

/** `transaction.customer_identified`: the pause point; it waits for continue or cancel. */
export type ReaderCustomerIdentified = Body<z.infer<typeof CustomerIdentified>>;

/**
 * `transaction.result`. `COMPLETED`: final, success or an error code. `CANCELLED`: stopped
 * or reversed; the reader will not charge. A result may arrive again for the same
 * transaction (a repeated command is answered with the current state): apply idempotently.
 */
export type ReaderResult = Body<z.infer<typeof TransactionResult>>;

/** The reader's own record of its last transaction, for crash recovery. */
export type { LastTransactionRecord };

/** Battery, charging, plugged in and screen message; a stationary reader has no battery. */
export type ReaderStatus = Omit<Body<z.infer<typeof StatusReport>>, 'query_id'>;

export type CardReaderEvents = {
  progress: [progress: ReaderProgress];
  customer_identified: [identified: ReaderCustomerIdentified];
  result: [result: ReaderResult];
  /** Every status report, asked for or not. */
  status: [status: ReaderStatus];
  /** The driver stopped: no error after close(), the reason when the port went away. */
  close: [error?: SerialLinkError];
};

export type CardReaderEvent = keyof CardReaderEvents;

export interface CardReader {
  /** What this reader can do; the agent reports it, the relay refuses what it cannot. */
  readonly capabilities: ReaderCapabilities;
  /** Starts a transaction; resolves when the reader acknowledged the command. */
  start(command: ReaderStart): Promise<void>;
  /** Goes on from the customer-identified pause, optionally with a new amount. */
  continue(transactionId: string, requestedAmount?: number): Promise<void>;
  /** Stops a running or paused transaction; the answer is a `result` event. */
  cancel(transactionId: string): Promise<void>;
  /** Undoes a successful transaction; the answer is a `result` event (CANCELLED, REVERSED). */
  reverse(transactionId: string): Promise<void>;
  /** The reader's record of its last transaction; undefined when it has none. */
  lastTransaction(): Promise<LastTransactionRecord | undefined>;
  /** A status report asked for now. */
  status(): Promise<ReaderStatus>;
  on<E extends CardReaderEvent>(event: E, listener: (...args: CardReaderEvents[E]) => void): this;
  off<E extends CardReaderEvent>(event: E, listener: (...args: CardReaderEvents[E]) => void): this;
  once<E extends CardReaderEvent>(event: E, listener: (...args: CardReaderEvents[E]) => void): this;
  /** Stops the driver and its link; pending calls reject with LINK_CLOSED. The port stays open. */
  close(): Promise<void>;
}
