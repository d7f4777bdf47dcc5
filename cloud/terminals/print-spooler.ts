/**
 * Print jobs: fragments sent with `continue: true` are joined (as base64 text) until the
 * last one arrives; the whole job must then decode to a PNG, which is queued for the
 * terminal's printer.
 */
import { PNG } from 'pngjs';
import type { PrintRequest } from '../../protocol/index.js';
import type { Clock } from '../../common/clock.js';
import { ApiError } from '../errors.js';
import { newCommandId } from '../ids.js';
import type { TerminalRecord } from '../store/records.js';

/** A joined job larger than this is refused: receipts are small, and memory is not. */
export const MAX_PRINT_JOB_CHARS = 4 * 1024 * 1024;
/** Fragments of a job not finished within this time are dropped. */
export const PRINT_FRAGMENT_TTL_MS = 5 * 60_000;

interface PendingJob {
  parts: string[];
  length: number;
  touchedAt: number;
}

export type SendPrint = (
  terminalId: string,
  contentsBase64: string,
  commandId: string,
) => Promise<void>;

export class PrintSpooler {
  private readonly pending = new Map<string, PendingJob>();

  constructor(
    private readonly clock: Clock,
    private readonly send: SendPrint,
  ) {}

  async print(terminal: TerminalRecord, request: PrintRequest): Promise<void> {
    if (!terminal.capabilities.printer) {
      throw new ApiError('NO_PRINTER', `terminal ${terminal.id} has no receipt printer`);
    }
    const now = this.clock.now().getTime();
    let job = this.pending.get(terminal.id);
    if (job && now - job.touchedAt > PRINT_FRAGMENT_TTL_MS) job = undefined;
    job ??= { parts: [], length: 0, touchedAt: now };
    job.parts.push(request.contents);
    job.length += request.contents.length;
    job.touchedAt = now;
    if (job.length > MAX_PRINT_JOB_CHARS) {
      this.pending.delete(terminal.id);
      throw new ApiError(
        'PRINT_TOO_LARGE',
        `print job exceeds ${MAX_PRINT_JOB_CHARS} base64 characters; it was discarded`,
      );
    }
    if (request.continue) {
      this.pending.set(terminal.id, job);
      return;
    }
    this.pending.delete(terminal.id);
    const contents = job.parts.join('');
    checkPng(contents);
    await this.send(terminal.id, contents, newCommandId());
  }
}

function checkPng(base64: string): void {
  const bytes = Buffer.from(base64, 'base64');
  try {
    const png = PNG.sync.read(bytes);
    if (png.width === 0 || png.height === 0) throw new Error('empty image');
  } catch {
    throw new ApiError('INVALID_PRINT_DATA', 'contents do not decode to a valid PNG image');
  }
}
