/**
 * Print jobs an attacker shapes: a small PNG whose header claims an enormous image is
 * refused from its header, at once, while the relay keeps answering others; the limits
 * follow the printers' head widths and the longest receipt (protocol/print-image.ts).
 */
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  MAX_PRINT_IMAGE_PIXELS,
  MAX_PRINT_IMAGE_WIDTH,
  MAX_PRINT_ROWS,
  WIDEST_HEAD_DOTS,
} from '../protocol/index.js';
import { expectError } from './support/api.js';
import { pngClaiming } from './support/png-bomb.js';
import { posFor, startTestRelay, type TestRelay } from './support/relay.js';

let relay: TestRelay;
let pos: ReturnType<typeof posFor>;

beforeAll(async () => {
  relay = await startTestRelay();
  pos = posFor(relay, await relay.newSimulator());
});
afterAll(async () => {
  await relay?.close();
});

const print = (contents: Buffer | string, extra: Record<string, unknown> = {}) =>
  pos.call('/terminal/print', {
    format: 'PNG',
    contents: typeof contents === 'string' ? contents : contents.toString('base64'),
    ...extra,
  });

const white = (width: number, height: number) => {
  const image = new PNG({ width, height });
  image.data.fill(255);
  return PNG.sync.write(image);
};

describe('print bombs', () => {
  it('a 39 KB PNG claiming 20,000 × 20,000 pixels is refused from its header, and others are answered meanwhile', async () => {
    const bomb = pngClaiming(20_000, 20_000, 2_000);
    expect(bomb.length).toBeLessThan(48 * 1024);
    const [refused, status] = await Promise.all([print(bomb), pos.call('/terminal/status', {})]);
    expectError(refused, 400, 'PRINT_TOO_LARGE');
    expect(refused.body.error.description).toContain('20000');
    expect(status.status).toBe(200);
  });

  it('refuses the bomb at its first fragment, without holding it', async () => {
    const bomb = pngClaiming(20_000, 20_000, 2_000).toString('base64');
    const first = await print(bomb.slice(0, 1000), { continue: true });
    expectError(first, 400, 'PRINT_TOO_LARGE');
    // Nothing was kept: a whole small image afterwards prints on its own.
    expect((await print(white(8, 8))).status).toBe(200);
  });

  it(`prints up to ${MAX_PRINT_IMAGE_WIDTH} pixels across (twice the ${WIDEST_HEAD_DOTS}-dot head), not one more`, async () => {
    expect((await print(white(MAX_PRINT_IMAGE_WIDTH, 2))).status).toBe(200);
    expectError(await print(white(MAX_PRINT_IMAGE_WIDTH + 1, 2)), 400, 'PRINT_TOO_LARGE');
  });

  it(`prints up to ${MAX_PRINT_ROWS} rows (2 m) on the widest head, not one more`, async () => {
    expect((await print(pngClaiming(WIDEST_HEAD_DOTS, MAX_PRINT_ROWS))).status).toBe(200);
    expectError(
      await print(pngClaiming(WIDEST_HEAD_DOTS, MAX_PRINT_ROWS + 1, 1)),
      400,
      'PRINT_TOO_LARGE',
    );
  });

  it(`decodes at most ${MAX_PRINT_IMAGE_PIXELS} pixels (the longest receipt on the widest head)`, async () => {
    const rows = MAX_PRINT_IMAGE_PIXELS / MAX_PRINT_IMAGE_WIDTH;
    expect((await print(pngClaiming(MAX_PRINT_IMAGE_WIDTH, rows))).status).toBe(200);
    expectError(
      await print(pngClaiming(MAX_PRINT_IMAGE_WIDTH, rows + 1, 1)),
      400,
      'PRINT_TOO_LARGE',
    );
  });

  it('refuses a header no PNG may have (a bit depth its colour type does not allow)', async () => {
    const bad = pngClaiming(8, 8);
    bad[24] = 3; // 3-bit greyscale does not exist
    expectError(await print(bad), 400, 'INVALID_PRINT_DATA');
  });
});
