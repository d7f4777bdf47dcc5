/**
 * The receipt-printer driver: PNG in, ESC/POS out, over any Duplex (a serial port, a TCP
 * socket to port 9100, one side of a stream pair with the emulated printer on the other).
 *
 * ```
 *   print(png)
 *     decode + raster ───────── INVALID_IMAGE, nothing sent
 *     DLE EOT 1,2,4 (,3) ────── COVER_OPEN | PAPER_OUT | OFFLINE, nothing sent (jobSent false)
 *     ESC @, GS v 0 × bands, ESC d, GS V
 *     GS r 1 ──────────────────┐ answered once the job is printed
 *       every pollIntervalMs:  │
 *       DLE EOT 1,2,4 (,3) ─────── COVER_OPEN | PAPER_OUT | OFFLINE mid-job (jobSent true)
 *     answer ◀─────────────────┘ or TIMEOUT after printTimeoutMs
 *     DLE EOT 1,2,4 ─────────── resolves with the final status (paper near end, …)
 * ```
 *
 * One operation at a time: calls queue. Queries go one by one, never with data behind them,
 * as ESC/POS asks of real-time commands.
 */
import type { Duplex } from 'node:stream';
import { systemTimers, type Timers } from '../../common/clock.js';
import { PrinterError } from './errors.js';
import {
  PAPER_SENSOR_REQUEST,
  decodeRealtimeStatus,
  encodeJob,
  isRealtimeStatusByte,
  isTransmitStatusByte,
  realtimeStatusRequest,
  statusProblem,
  type CutMode,
  type RealtimeStatusKind,
} from './escpos.js';
import { pngToRaster, type Raster } from './png-raster.js';
import { ReplyReader } from './replies.js';
import type { PrinterStatus } from './status.js';

/**
 * How print() knows a job went well:
 * - 'printed' (default): waits for GS r 1, which the printer answers only after printing the
 *   job, polling real-time status meanwhile; catches paper running out mid-job.
 * - 'sent': one real-time status query once the job is written; for printers that do not
 *   answer GS r (some clones, some network interfaces). Misses a paper-out mid-job.
 * - 'none': no queries at all; for write-only links. Cannot report paper out.
 */
export type ConfirmMode = 'printed' | 'sent' | 'none';

export interface PrintOptions {
  /** Head width in dots, a multiple of 8 (default 384 = 58 mm; 576 = 80 mm). */
  headWidth?: number;
  /** Floyd–Steinberg dithering instead of a threshold (default false). */
  dither?: boolean;
  /** Luminance below which a dot is black, 0-255 (default 128). */
  threshold?: number;
  /** Rows per GS v 0 (default 256); see JobOptions. */
  bandRows?: number;
  /** Lines fed before the cut (default 4). */
  feedLines?: number;
  /** Default 'partial'. */
  cut?: CutMode;
  /** Default 'printed'. */
  confirm?: ConfirmMode;
  /**
   * How long a job may take to print before TIMEOUT, in ms, or a function of its rows
   * (default 10 s + 5 ms a row: a slow 25 mm/s printer at 8 dots/mm). Too short fails good
   * long jobs; too long delays the report of a printer that stopped answering.
   */
  printTimeoutMs?: number | ((rows: number) => number);
  /**
   * Told after each piece of the job is written (bytes so far, of total). With it, the job
   * is written in pieces of PROGRESS_CHUNK bytes, each once the last has left: on a slow
   * serial line a large image takes minutes, and a silent tool looks hung.
   */
  onProgress?: (sent: number, total: number) => void;
}

/** ≈ 1 s of a 9,600 baud line: progress often enough to see, rarely enough to be cheap. */
export const PROGRESS_CHUNK = 1024;

export interface ReceiptPrinterOptions extends PrintOptions {
  /**
   * Wait for each status byte, in ms (default 1000). DLE EOT is answered at once, so this
   * only needs to cover the line and a busy interface board.
   */
  statusTimeoutMs?: number;
  /** Real-time status poll period while a job prints, in ms (default 500). */
  pollIntervalMs?: number;
  timers?: Timers;
}

export interface PrintResult {
  /** Head width and rows printed. */
  width: number;
  rows: number;
  /** GS v 0 commands and total bytes written. */
  bands: number;
  bytes: number;
  /** The status after the job; undefined with confirm 'none'. */
  status?: PrinterStatus;
}

const defaultPrintTimeout = (rows: number) => 10_000 + 5 * rows;

export class ReceiptPrinter {
  private readonly replies: ReplyReader;
  private readonly timers: Timers;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly stream: Duplex,
    private readonly options: ReceiptPrinterOptions = {},
  ) {
    this.timers = options.timers ?? systemTimers;
    this.replies = new ReplyReader(stream, this.timers);
  }

  /** Bytes received that answered no query (late answers, XON/XOFF, noise). */
  get strayBytes(): number {
    return this.replies.strayBytes;
  }

  /** Prints a PNG; rejects with a PrinterError. */
  print(png: Uint8Array, options: PrintOptions = {}): Promise<PrintResult> {
    const merged = { ...this.options, ...options };
    let raster: Raster;
    try {
      raster = pngToRaster(png, merged);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.printRaster(raster, options);
  }

  /** Prints a raster already made for this printer's head. */
  printRaster(raster: Raster, options: PrintOptions = {}): Promise<PrintResult> {
    return this.serialize(() => this.runJob(raster, { ...this.options, ...options }));
  }

  /** The printer's real-time status (DLE EOT 1, 2, 4, and 3 when it reports an error). */
  status(): Promise<PrinterStatus> {
    return this.serialize(() => this.readStatus());
  }

  /** Stops listening to the stream; does not close it (its owner does). Pending calls fail. */
  close(): void {
    this.replies.detach();
  }

  private serialize<T>(task: () => Promise<T>): Promise<T> {
    const run = this.queue.then(task, task);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async runJob(raster: Raster, options: ReceiptPrinterOptions): Promise<PrintResult> {
    const confirm = options.confirm ?? 'printed';
    const job = encodeJob(raster, options);
    const bands = Math.ceil(raster.height / (options.bandRows ?? 256));
    const result: PrintResult = {
      width: raster.width,
      rows: raster.height,
      bands,
      bytes: job.length,
    };

    if (confirm !== 'none') this.failOnProblem(await this.readStatus(), false);
    const failure = this.replies.failure;
    if (failure) throw failure;
    // From here on part of the job may have reached the printer: every error says jobSent.
    try {
      await this.writeJob(job, options.onProgress);
      if (confirm === 'none') return result;
      if (confirm === 'printed') await this.waitUntilPrinted(raster.height, options);
      const status = await this.readConfirmedStatus();
      this.failOnProblem(status, true);
      return { ...result, status };
    } catch (error) {
      throw error instanceof PrinterError ? markSent(error) : error;
    }
  }

  /** GS r 1 answers once everything before it is printed; poll DLE EOT meanwhile. */
  private async waitUntilPrinted(rows: number, options: ReceiptPrinterOptions): Promise<void> {
    const limit = options.printTimeoutMs ?? defaultPrintTimeout;
    const timeoutMs = typeof limit === 'function' ? limit(rows) : limit;
    const printed = this.replies.wait(isTransmitStatusByte, timeoutMs, 'GS r 1 after the job');
    let outcome: 'printed' | PrinterError | undefined;
    const settled = printed.answer.then(
      () => void (outcome ??= 'printed'),
      (error: PrinterError) => void (outcome ??= error),
    );
    try {
      await this.write(PAPER_SENSOR_REQUEST);
      // One query at a time: the loop waits for each status before it looks again.
      for (;;) {
        if (outcome === undefined) {
          const nap = this.sleep(options.pollIntervalMs ?? 500);
          await Promise.race([nap.done, settled]);
          nap.cancel();
        }
        if (outcome === 'printed') return;
        if (outcome) {
          if (outcome.code !== 'TIMEOUT') throw outcome;
          // Say why the job did not finish, if the printer still answers real-time queries.
          const status = await this.readConfirmedStatus().catch(() => undefined);
          if (status) this.failOnProblem(status, true);
          throw new PrinterError('TIMEOUT', outcome.message, { jobSent: true, status });
        }
        this.failOnProblem(await this.readConfirmedStatus(), true);
      }
    } finally {
      printed.cancel();
    }
  }

  /**
   * Some printers answer a `10 04 n` that happens to lie inside raster data, unasked; such a
   * stray byte, arriving while a query waits, would be read as its answer. Once a job is on
   * its way, a status that stops the job must therefore be read twice, alike.
   */
  private async readConfirmedStatus(): Promise<PrinterStatus> {
    const first = await this.readStatus();
    const problem = statusProblem(first);
    if (!problem) return first;
    const second = await this.readStatus();
    return statusProblem(second) === problem ? second : this.readStatus();
  }

  private async readStatus(): Promise<PrinterStatus> {
    const query = async (n: RealtimeStatusKind) => {
      const reply = this.replies.wait(isRealtimeStatusByte, this.statusTimeoutMs, `DLE EOT ${n}`);
      try {
        await this.write(realtimeStatusRequest(n));
      } catch (error) {
        reply.cancel();
        throw error;
      }
      return reply.answer;
    };
    const printer = await query(1);
    const offline = await query(2);
    const paper = await query(4);
    const error = offline & 0x40 ? await query(3) : undefined;
    return decodeRealtimeStatus(
      error === undefined ? { printer, offline, paper } : { printer, offline, error, paper },
    );
  }

  private get statusTimeoutMs(): number {
    return this.options.statusTimeoutMs ?? 1000;
  }

  private failOnProblem(status: PrinterStatus, jobSent: boolean): void {
    const problem = statusProblem(status);
    if (!problem) return;
    const words = { COVER_OPEN: 'cover open', PAPER_OUT: 'paper out', OFFLINE: 'offline' };
    throw new PrinterError(
      problem,
      `printer reports ${words[problem]}${jobSent ? '' : '; the job was not sent'}`,
      { jobSent, status },
    );
  }

  private async writeJob(
    job: Buffer,
    onProgress: ((sent: number, total: number) => void) | undefined,
  ): Promise<void> {
    if (!onProgress) return this.write(job);
    for (let sent = 0; sent < job.length;) {
      const piece = job.subarray(sent, sent + PROGRESS_CHUNK);
      await this.write(piece);
      sent += piece.length;
      onProgress(sent, job.length);
    }
  }

  private write(bytes: Buffer): Promise<void> {
    const failure = this.replies.failure;
    if (failure) return Promise.reject(failure);
    return new Promise((resolve, reject) => {
      this.stream.write(bytes, (error) => {
        if (!error) return resolve();
        reject(
          new PrinterError('DISCONNECTED', `write to printer failed: ${error.message}`, {
            cause: error,
          }),
        );
      });
    });
  }

  private sleep(ms: number): { done: Promise<void>; cancel(): void } {
    let handle: unknown;
    const done = new Promise<void>((resolve) => (handle = this.timers.setTimeout(resolve, ms)));
    return { done, cancel: () => this.timers.clearTimeout(handle) };
  }
}

function markSent(error: PrinterError): PrinterError {
  if (error.jobSent) return error;
  return new PrinterError(error.code, error.message, {
    jobSent: true,
    disconnected: error.disconnected,
    status: error.status,
    cause: error.cause,
  });
}
