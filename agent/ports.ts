/**
 * The hardware the agent drives, behind the smallest interfaces it needs (as
 * node-serialport's BindingInterface): the card-reader driver over the serial link, the
 * emulated firmware, or a test's in-memory reader are all just implementations.
 *
 * The shapes are the card-reader driver's (firmware-bridge/reader/card-reader.ts), so an
 * adapter to the driver only forwards.
 */
import type {
  LastTransactionRecord,
  ReaderCustomerIdentified,
  ReaderProgress,
  ReaderResult,
  ReaderStart,
  ReaderStatus,
} from '../firmware-bridge/reader/card-reader.js';

export type { ReaderProgress, ReaderResult, ReaderStart };
export type ReaderIdentified = ReaderCustomerIdentified;
/** The reader's own record of its last transaction, for reconciliation. */
export type ReaderRecord = LastTransactionRecord;
export type ReaderReadings = ReaderStatus;

export interface ReaderEvents {
  /** Screen text while a transaction runs. */
  progress: ReaderProgress;
  /** The pause point: the reader waits for continue or cancel. */
  customer_identified: ReaderIdentified;
  result: ReaderResult;
  /** Battery, charging, plugged in, screen message: asked for or sent unasked. */
  status: ReaderReadings;
}

export type ReaderListener<E extends keyof ReaderEvents> = (event: ReaderEvents[E]) => void;

/**
 * Commands resolve once the reader has taken them (not when the transaction ends: that
 * comes as events). A rejection whose error has `disconnected: true` means delivery is
 * unknown; any rejection makes the agent ask `lastTransaction()` before it decides.
 */
export interface ReaderPort {
  start(request: ReaderStart): Promise<void>;
  continue(transactionId: string, requestedAmount?: number): Promise<void>;
  /** Stop a running or paused transaction; answered with a `result` event. */
  cancel(transactionId: string): Promise<void>;
  /** Undo a completed transaction; answered with a `result` event (CANCELLED when reversed). */
  reverse(transactionId: string): Promise<void>;
  /** The reader's record of its last transaction; null when it has none. */
  lastTransaction(): Promise<ReaderRecord | null>;
  status(): Promise<ReaderReadings>;
  on<E extends keyof ReaderEvents>(event: E, listener: ReaderListener<E>): void;
  off<E extends keyof ReaderEvents>(event: E, listener: ReaderListener<E>): void;
  close(): Promise<void>;
}

/** A receipt printer; a failure rejects (the agent logs it: a receipt never stops a payment). */
export interface PrinterPort {
  print(png: Buffer): Promise<void>;
  close(): Promise<void>;
}
