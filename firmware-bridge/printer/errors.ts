/**
 * The one error type of the receipt printer: a stable `code` and flags to branch on, never
 * the message (as stripe-node and node-serialport do).
 */
import type { PrinterStatus } from './status.js';

export type PrinterErrorCode =
  /** The printer reports no paper (roll end sensor, or printing stopped at paper end). */
  | 'PAPER_OUT'
  /** The printer reports its roll paper cover open. */
  | 'COVER_OPEN'
  /** The printer is offline for another reason: an error, the feed button, a cutter jam. */
  | 'OFFLINE'
  /** The printer did not answer a status query, or did not finish the job, in time. */
  | 'TIMEOUT'
  /** The PNG could not be decoded, or is too large to print; nothing was sent. */
  | 'INVALID_IMAGE'
  /** The stream to the printer closed, failed or could not be opened. */
  | 'DISCONNECTED';

export class PrinterError extends Error {
  override readonly name = 'PrinterError';
  /**
   * Whether any byte of the job reached the stream. False means nothing will print: safe to
   * retry. True means the printer holds the job (or part of it) and will usually finish it
   * once the cause is cleared: retrying can print the receipt twice.
   */
  readonly jobSent: boolean;
  /** True when the stream is gone (DISCONNECTED, or a connect timeout). */
  readonly disconnected: boolean;
  /** The last status the printer reported, when it answered one. */
  readonly status?: PrinterStatus;

  constructor(
    readonly code: PrinterErrorCode,
    message: string,
    options: {
      jobSent?: boolean;
      disconnected?: boolean;
      status?: PrinterStatus;
      cause?: unknown;
    } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.jobSent = options.jobSent ?? false;
    this.disconnected = options.disconnected ?? code === 'DISCONNECTED';
    if (options.status) this.status = options.status;
  }
}
