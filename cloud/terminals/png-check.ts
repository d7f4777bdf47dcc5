/**
 * Whether a print job's PNG can be printed: its header is read first, and an image no
 * receipt printer can print (protocol/print-image.ts) is refused before a pixel is decoded;
 * the rest is decoded on a thread of its own (png-check-thread.ts), one image at a time,
 * so that decoding never holds the relay's event loop.
 */
import type { Worker } from 'node:worker_threads';
import { readPngHeader, unprintableSize } from '../../protocol/index.js';
import { ApiError } from '../errors.js';
import { startThread } from '../threads.js';

/** A PNG to decode, and the decoder's verdict. */
export interface PngCheckRequest {
  id: number;
  png: Uint8Array;
}
export interface PngCheckAnswer {
  id: number;
  ok: boolean;
}

/** Images waiting for the decoding thread; beyond, 503 SERVICE_BUSY at once. */
export const MAX_QUEUED_PNG_CHECKS = 8;

/**
 * Refuses, from its first bytes, a PNG no receipt printer can print: not a PNG header
 * (INVALID_PRINT_DATA) or too wide or too long (PRINT_TOO_LARGE). Needs the first 29 bytes.
 */
export function checkPngHeader(png: Uint8Array): void {
  const header = readPngHeader(png);
  if (!header) {
    throw new ApiError('INVALID_PRINT_DATA', 'contents do not start with a valid PNG header');
  }
  const why = unprintableSize(header.width, header.height);
  if (why) throw new ApiError('PRINT_TOO_LARGE', `${why}; the job was discarded`);
}

interface Waiting {
  resolve: (ok: boolean) => void;
}

export class PngChecker {
  private worker: Worker | undefined;
  private nextId = 1;
  private readonly waiting = new Map<number, Waiting>();

  /** Resolves when `png` decodes to a printable image; throws ApiError otherwise. */
  async check(png: Uint8Array): Promise<void> {
    checkPngHeader(png);
    if (this.waiting.size >= MAX_QUEUED_PNG_CHECKS) {
      throw new ApiError('SERVICE_BUSY', 'print images are being checked; repeat shortly', {
        'Retry-After': '1',
      });
    }
    const ok = await new Promise<boolean>((resolve) => {
      const id = this.nextId++;
      this.waiting.set(id, { resolve });
      this.thread().postMessage({ id, png } satisfies PngCheckRequest);
    });
    if (!ok)
      throw new ApiError('INVALID_PRINT_DATA', 'contents do not decode to a valid PNG image');
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    this.failAll();
    await worker?.terminate();
  }

  private thread(): Worker {
    if (this.worker) return this.worker;
    const worker = startPngThread();
    worker.unref();
    worker.on('message', ({ id, ok }: PngCheckAnswer) => {
      this.waiting.get(id)?.resolve(ok);
      this.waiting.delete(id);
    });
    // A thread that dies (out of memory on an image) fails what it held; the next check
    // starts another.
    const gone = () => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.failAll();
    };
    worker.on('error', gone);
    worker.on('exit', gone);
    this.worker = worker;
    return worker;
  }

  private failAll(): void {
    for (const waiting of this.waiting.values()) waiting.resolve(false);
    this.waiting.clear();
  }
}

/** A thread of its own; an image within the size limits decodes in well under its memory. */
function startPngThread() {
  return startThread('./png-check-thread.js', import.meta.url, {
    resourceLimits: { maxYoungGenerationSizeMb: 8, maxOldGenerationSizeMb: 64 },
  });
}
