import { describe, expect, it } from 'vitest';
import { createStreamPair, seededRandom, type LineFaults } from './stream-pair.js';

async function carry(faults: LineFaults, seed: number, writes: Buffer[]) {
  const pair = createStreamPair({ seed, aToB: faults });
  const chunks: Buffer[] = [];
  pair.b.on('data', (chunk: Buffer) => chunks.push(chunk));
  for (const bytes of writes) pair.a.write(bytes);
  await pair.idle();
  return { chunks, bytes: Buffer.concat(chunks), stats: pair.stats.aToB };
}

const text = Array.from({ length: 20 }, (_, i) => Buffer.from(`message number ${i};`));

describe('createStreamPair', () => {
  it('carries bytes both ways unchanged on a clean line, one chunk per write', async () => {
    const pair = createStreamPair();
    const atA: Buffer[] = [];
    const atB: Buffer[] = [];
    pair.a.on('data', (c: Buffer) => atA.push(c));
    pair.b.on('data', (c: Buffer) => atB.push(c));
    pair.a.write('ping');
    pair.b.write('pong');
    await pair.idle();
    expect(Buffer.concat(atB).toString()).toBe('ping');
    expect(Buffer.concat(atA).toString()).toBe('pong');
  });

  it('splits writes into random chunks without losing or reordering bytes', async () => {
    const { chunks, bytes, stats } = await carry({ maxChunk: 5 }, 7, text);
    expect(bytes).toEqual(Buffer.concat(text));
    expect(chunks.length).toBeGreaterThan(text.length);
    expect(Math.max(...chunks.map((c) => c.length))).toBeLessThanOrEqual(5);
    expect(stats.chunks).toBe(chunks.length);
  });

  it('damages the same way for the same seed, and counts the damage', async () => {
    const faults = { dropRate: 0.05, flipRate: 0.05, garbageRate: 0.3 };
    const one = await carry(faults, 42, text);
    const two = await carry(faults, 42, text);
    const other = await carry(faults, 43, text);
    expect(one.bytes).toEqual(two.bytes);
    expect(one.bytes).not.toEqual(other.bytes);
    expect(one.stats.droppedBytes).toBeGreaterThan(0);
    expect(one.stats.flippedBytes).toBeGreaterThan(0);
    expect(one.stats.garbageBytes).toBeGreaterThan(0);
    const sent = Buffer.concat(text).length;
    expect(one.stats.bytesDelivered).toBe(sent - one.stats.droppedBytes + one.stats.garbageBytes);
    expect(one.bytes.length).toBe(one.stats.bytesDelivered);
  });

  it('loses the middle byte of every nth write, whatever the generator draws', async () => {
    const { bytes, stats } = await carry({ dropInEveryNthWrite: 5 }, 1, text);
    const expected = text.map((write, i) =>
      (i + 1) % 5 === 0
        ? Buffer.concat([
            write.subarray(0, write.length >> 1),
            write.subarray((write.length >> 1) + 1),
          ])
        : write,
    );
    expect(bytes).toEqual(Buffer.concat(expected));
    expect(stats.droppedBytes).toBe(4);
  });

  it('ends the other side, and a destroyed side takes the other with it', async () => {
    const pair = createStreamPair();
    let ended = false;
    pair.b.on('end', () => (ended = true)).resume();
    pair.a.end();
    await pair.idle();
    expect(ended).toBe(true);
    const cable = createStreamPair();
    cable.a.destroy();
    expect(cable.b.destroyed).toBe(true);
  });

  it('seededRandom repeats its sequence for a seed and stays in [0, 1)', () => {
    const a = seededRandom(5);
    const b = seededRandom(5);
    const values = Array.from({ length: 1000 }, () => a());
    expect(values).toEqual(Array.from({ length: 1000 }, () => b()));
    expect(Math.min(...values)).toBeGreaterThanOrEqual(0);
    expect(Math.max(...values)).toBeLessThan(1);
    expect(new Set(values).size).toBe(1000);
  });
});
