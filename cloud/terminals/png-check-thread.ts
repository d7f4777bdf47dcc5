/**
 * The thread that decodes print jobs' PNGs for png-check.ts, one at a time, so that a
 * large or hostile image holds this thread and never the relay's event loop.
 */
import { parentPort } from 'node:worker_threads';
import { PNG } from 'pngjs';
import type { PngCheckAnswer, PngCheckRequest } from './png-check.js';

const port = parentPort!;
port.on('message', ({ id, png }: PngCheckRequest) => {
  let answer: PngCheckAnswer;
  try {
    const decoded = PNG.sync.read(Buffer.from(png.buffer, png.byteOffset, png.byteLength));
    answer = { id, ok: decoded.width > 0 && decoded.height > 0 };
  } catch {
    answer = { id, ok: false };
  }
  port.postMessage(answer);
});
