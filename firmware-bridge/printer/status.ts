/**
 * What the printer says about itself, as the driver, its errors and the bench tools read
 * it; escpos.ts decodes it from the real-time status bytes (docs/printer.md has the bits).
 */

/** The four DLE EOT answers, as received. `error` only when `offline` reported an error. */
export interface RealtimeStatusBytes {
  printer: number;
  offline: number;
  error?: number;
  paper: number;
}

export interface PrinterStatus {
  /** DLE EOT 1 bit 3 clear. */
  online: boolean;
  /** DLE EOT 2 bit 2. */
  coverOpen: boolean;
  /** DLE EOT 2 bit 5 (stopped at paper end) or DLE EOT 4 bit 5 (roll end sensor). */
  paperOut: boolean;
  /** DLE EOT 4 bit 2 or 3 (near-end sensor; always false on printers without one). */
  paperNearEnd: boolean;
  /** DLE EOT 2 bit 3: paper is being fed with the FEED button (offline meanwhile). */
  feedButton: boolean;
  /** DLE EOT 2 bit 6; the cause from DLE EOT 3 below. */
  error: boolean;
  /** DLE EOT 3 bit 3: cutter jammed (recoverable after clearing it). */
  autocutterError: boolean;
  /** DLE EOT 3 bit 5: needs a power cycle or service. */
  unrecoverableError: boolean;
  /** DLE EOT 3 bit 6: head overheated (clears by itself) or cover opened while printing. */
  autoRecoverableError: boolean;
  /** The bytes the status was read from, for logs and bench tools. */
  raw: RealtimeStatusBytes;
}
