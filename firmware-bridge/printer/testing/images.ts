/** Small PNGs made in code for the printer's tests. */
import { PNG } from 'pngjs';
import type { ManualTimers } from '../../../common/testing/manual-timers.js';

export type Rgba = readonly [r: number, g: number, b: number, a: number];
export const BLACK: Rgba = [0, 0, 0, 255];
export const WHITE: Rgba = [255, 255, 255, 255];

/** A PNG whose pixel (x, y) is pixel(x, y). */
export function makePng(
  width: number,
  height: number,
  pixel: (x: number, y: number) => Rgba,
): Buffer {
  const png = new PNG({ width, height });
  const data = png.data;
  for (let y = 0, p = 0; y < height; y++) {
    for (let x = 0; x < width; x++, p += 4) {
      const [r, g, b, a] = pixel(x, y);
      data[p] = r;
      data[p + 1] = g;
      data[p + 2] = b;
      data[p + 3] = a;
    }
  }
  return PNG.sync.write(png);
}

/** Black where x + y is even. */
export const checkerboard = (width: number, height: number): Buffer =>
  makePng(width, height, (x, y) => ((x + y) % 2 === 0 ? BLACK : WHITE));

/** A receipt-like image: lines of "text" blocks and a frame, deterministic. */
export function receiptLike(width: number, height: number): Buffer {
  return makePng(width, height, (x, y) => {
    if (x < 2 || y < 2 || x >= width - 2 || y >= height - 2) return BLACK;
    const line = Math.floor(y / 24);
    const inGlyph = y % 24 > 4 && y % 24 < 20 && ((x >> 3) * 7 + line * 13) % 5 !== 0;
    return inGlyph && (x ^ y) % 3 !== 0 ? BLACK : WHITE;
  });
}

/** Gives the event loop a few turns: stream-pair deliveries and promise chains settle. */
export async function settle(turns = 5): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve));
}

/**
 * Runs a promise to completion with manual timers: waits for `idle` (a stream pair's idle(),
 * say), then fires the next timer, until the promise settles. Time passes only when nothing
 * else can happen.
 */
export async function driveTimers<T>(
  promise: Promise<T>,
  timers: ManualTimers,
  idle: () => Promise<void> = settle,
): Promise<T> {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  for (;;) {
    await idle();
    await settle();
    if (done) return promise;
    if (!timers.fireNext()) throw new Error('stuck: promise pending and no timer left');
  }
}
