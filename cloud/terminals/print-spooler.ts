/**
 * Print jobs: fragments sent with `continue: true` are joined (as base64 text) until the
 * last one arrives; the whole job must then be a PNG a receipt printer can print
 * (png-check.ts), which is queued for the terminal's printer. A job's header is judged as
 * soon as its first bytes arrive, so an image no printer can print is refused at its first
 * fragment; fragments of a job left unfinished are dropped after PRINT_FRAGMENT_TTL_MS.
 */
import type { PrintRequest } from '../../protocol/index.js';
import { systemTimers, type Timers } from '../../common/clock.js';
import { ApiError } from '../errors.js';
import { newCommandId } from '../ids.js';
import type { TerminalRecord } from '../store/records.js';
import { PngChecker, checkPngHeader } from './png-check.js';

/** A joined job larger than this is refused: receipts are small, and memory is not. */
export const MAX_PRINT_JOB_CHARS = 4 * 1024 * 1024;
/** Fragments of a job not finished within this time of the last one are dropped. */
export const PRINT_FRAGMENT_TTL_MS = 5 * 60_000;
/** Unfinished jobs of all terminals together; beyond, 503 SERVICE_BUSY. */
export const MAX_PENDING_PRINT_CHARS = 64 * 1024 * 1024;

/** Base64 characters that hold a PNG's signature and IHDR (29 bytes). */
const HEADER_CHARS = 40;

interface PendingJob {
  parts: string[];
  length: number;
  expiry: unknown;
}

export type SendPrint = (
  terminalId: string,
  contentsBase64: string,
  commandId: string,
) => Promise<void>;

export class PrintSpooler {
  private readonly pending = new Map<string, PendingJob>();
  private pendingChars = 0;
  private readonly checker = new PngChecker();

  private readonly timers: Timers;
  private readonly maxPendingChars: number;

  constructor(
    private readonly send: SendPrint,
    options: { timers?: Timers; maxPendingChars?: number } = {},
  ) {
    this.timers = options.timers ?? systemTimers;
    this.maxPendingChars = options.maxPendingChars ?? MAX_PENDING_PRINT_CHARS;
  }

  /** Base64 characters of unfinished jobs held, all terminals together. */
  get heldChars(): number {
    return this.pendingChars;
  }

  async print(terminal: TerminalRecord, request: PrintRequest): Promise<void> {
    if (!terminal.capabilities.printer) {
      throw new ApiError('NO_PRINTER', `terminal ${terminal.id} has no receipt printer`);
    }
    const job = this.take(terminal.id) ?? { parts: [], length: 0, expiry: undefined };
    const before = job.length;
    job.parts.push(request.contents);
    job.length += request.contents.length;
    if (job.length > MAX_PRINT_JOB_CHARS) {
      throw new ApiError(
        'PRINT_TOO_LARGE',
        `print job exceeds ${MAX_PRINT_JOB_CHARS} base64 characters; it was discarded`,
      );
    }
    if (before < HEADER_CHARS && job.length >= HEADER_CHARS) {
      checkPngHeader(Buffer.from(job.parts.join('').slice(0, HEADER_CHARS), 'base64'));
    }
    if (request.continue) {
      if (this.pendingChars + job.length > this.maxPendingChars) {
        throw new ApiError('SERVICE_BUSY', 'too many unfinished print jobs; repeat shortly', {
          'Retry-After': '10',
        });
      }
      this.hold(terminal.id, job);
      return;
    }
    const contents = job.parts.join('');
    await this.checker.check(Buffer.from(contents, 'base64'));
    await this.send(terminal.id, contents, newCommandId());
  }

  /** Drops every unfinished job and stops the decoding thread. */
  async close(): Promise<void> {
    for (const terminalId of [...this.pending.keys()]) this.take(terminalId);
    await this.checker.close();
  }

  /** Removes and answers a terminal's unfinished job; a refused fragment drops the job. */
  private take(terminalId: string): PendingJob | undefined {
    const job = this.pending.get(terminalId);
    if (!job) return undefined;
    this.pending.delete(terminalId);
    this.pendingChars -= job.length;
    this.timers.clearTimeout(job.expiry);
    return job;
  }

  private hold(terminalId: string, job: PendingJob): void {
    job.expiry = this.timers.setTimeout(() => this.take(terminalId), PRINT_FRAGMENT_TTL_MS, {
      unref: true,
    });
    this.pending.set(terminalId, job);
    this.pendingChars += job.length;
  }
}
