/**
 * PNG print data, bent: valid images of every colour type and depth with bytes changed,
 * cut short, header sizes rewritten, sent whole or in fragments. The spooler queues a
 * printable image or refuses with a catalogued 4xx (or 503 when busy): never another
 * error, never a crash of its decoding thread that outlives the job.
 */
import fc from 'fast-check';
import { PNG } from 'pngjs';
import { afterAll, describe, expect, it } from 'vitest';
import { ApiError } from '../cloud/errors.js';
import type { TerminalRecord } from '../cloud/store/records.js';
import { fuzzParameters } from './support/fuzz.js';
import { PrintSpooler } from '../cloud/terminals/print-spooler.js';

const terminal: TerminalRecord = {
  id: 't-1',
  accountId: 'a-1',
  kind: 'SIMULATOR',
  capabilities: { printer: true, battery: false },
  status: { terminal_id: 't-1', updated_at: '2026-01-01T00:00:00Z' },
  createdAt: '2026-01-01T00:00:00Z',
};

let queued = 0;
const spooler = new PrintSpooler(async () => {
  queued++;
});
afterAll(() => spooler.close());

const image = fc
  .record({
    width: fc.integer({ min: 1, max: 48 }),
    height: fc.integer({ min: 1, max: 48 }),
    colour: fc.constantFrom(
      { colorType: 0, bitDepth: 8 },
      { colorType: 2, bitDepth: 8 },
      { colorType: 4, bitDepth: 8 },
      { colorType: 6, bitDepth: 8 },
      { colorType: 6, bitDepth: 16 },
    ),
    fill: fc.integer({ min: 0, max: 255 }),
  })
  .map(({ width, height, colour, fill }) => {
    const png = new PNG({ width, height });
    png.data.fill(fill);
    return PNG.sync.write(png, colour as never);
  });

type Bend =
  | { kind: 'bytes'; at: number[]; values: number[] }
  | { kind: 'cut'; at: number }
  | { kind: 'size'; width: number; height: number }
  | { kind: 'none' };

const bend: fc.Arbitrary<Bend> = fc.oneof(
  fc.constant({ kind: 'none' as const }),
  fc.record({
    kind: fc.constant('bytes' as const),
    at: fc.array(fc.nat(), { minLength: 1, maxLength: 8 }),
    values: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 8, maxLength: 8 }),
  }),
  fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
  fc.record({
    kind: fc.constant('size' as const),
    width: fc.oneof(fc.integer({ min: 0, max: 2000 }), fc.nat({ max: 0xffffffff })),
    height: fc.oneof(fc.integer({ min: 0, max: 40_000 }), fc.nat({ max: 0xffffffff })),
  }),
);

function bent(png: Buffer, how: Bend): Buffer {
  const copy = Buffer.from(png);
  switch (how.kind) {
    case 'bytes':
      how.at.forEach((at, i) => (copy[at % copy.length] = how.values[i]!));
      return copy;
    case 'cut':
      return copy.subarray(0, how.at % copy.length);
    case 'size':
      copy.writeUInt32BE(how.width, 16);
      copy.writeUInt32BE(how.height, 20);
      return copy;
    case 'none':
      return copy;
  }
}

describe('PNG print data, bent', () => {
  it('is queued, or refused with a catalogued 4xx, in one piece or in fragments', async () => {
    await fc.assert(
      fc.asyncProperty(
        image,
        bend,
        fc.array(fc.integer({ min: 1, max: 400 }), { maxLength: 4 }),
        async (png, how, cuts) => {
          const contents = bent(png, how).toString('base64');
          if (contents.length === 0) return;
          const fragments: string[] = [];
          let from = 0;
          for (const size of cuts) {
            if (from + size >= contents.length) break;
            fragments.push(contents.slice(from, from + size));
            from += size;
          }
          fragments.push(contents.slice(from));
          const before = queued;
          try {
            for (const [i, part] of fragments.entries()) {
              await spooler.print(terminal, {
                format: 'PNG',
                terminal_id: terminal.id,
                contents: part,
                continue: i < fragments.length - 1,
              });
            }
            expect(queued).toBe(before + 1);
          } catch (error) {
            expect(error).toBeInstanceOf(ApiError);
            expect(['INVALID_PRINT_DATA', 'PRINT_TOO_LARGE']).toContain((error as ApiError).code);
            // A refused fragment drops its job: nothing is left to join the next one.
            await spooler
              .print(terminal, {
                format: 'PNG',
                terminal_id: terminal.id,
                contents: 'AAAA',
              })
              .catch(() => undefined);
          }
          if (how.kind === 'none') expect(queued).toBe(before + 1);
          expect(spooler.heldChars).toBe(0);
        },
      ),
      fuzzParameters(60),
    );
  });
});
