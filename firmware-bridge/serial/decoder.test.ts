import { describe, expect, it } from 'vitest';
import type { Frame } from './codec.js';
import type { DropInfo } from './decoder.js';
import { decodeAll, json, toWire } from './testing/wire.js';

const frame = (seq: number, body: unknown = { v: 1, type: 'status.query', n: seq }): Frame => ({
  type: 'DATA',
  seq,
  payload: json(body),
});
const seqs = (frames: Frame[]) => frames.map((f) => f.seq);

describe('FrameDecoder', () => {
  it('decodes back-to-back frames, whatever the chunking', () => {
    const sent = [frame(1), { type: 'ACK', seq: 9, payload: Buffer.alloc(0) } as Frame, frame(2)];
    const wire = toWire(...sent);
    for (const chunk of [1, 2, 3, 7, wire.length]) {
      const { frames, decoder } = decodeAll(wire, { chunk });
      expect(frames).toEqual(sent);
      expect(decoder.stats.frames).toBe(3);
      expect(decoder.stats.droppedBytes).toBe(0);
    }
  });

  it('drops a corrupted frame and decodes the next one', () => {
    const one = toWire(frame(1));
    const two = toWire(frame(2));
    const three = toWire(frame(3));
    two[10] = (two[10] ?? 0) ^ 0x04;
    const { frames, decoder } = decodeAll(Buffer.concat([one, two, three]), { chunk: 5 });
    expect(seqs(frames)).toEqual([1, 3]);
    expect(decoder.stats.dropped['bad-crc']).toBe(1);
    expect(frames[1]?.payload.toString()).toBe('{"v":1,"type":"status.query","n":3}');
  });

  it('survives garbage and half frames before a good frame', () => {
    const good = toWire(frame(7));
    const half = toWire(frame(6)).subarray(0, 20);
    const garbage = Buffer.from('\x00\xff\x13garbage\xdb\x41line noise', 'latin1');
    const { frames, decoder } = decodeAll(
      Buffer.concat([garbage, half, Buffer.from([0xc0, 0x55, 0xc0]), half, good]),
      { chunk: 3 },
    );
    expect(seqs(frames)).toEqual([7]);
    expect(frames[0]?.payload.toString()).toBe('{"v":1,"type":"status.query","n":7}');
    // The garbage (closed by the half frame's leading END; DB 41 is a bad escape), each
    // half frame (closed by the next END), and the lone 0x55.
    expect(decoder.stats.dropped['bad-escape']).toBe(1);
    expect(decoder.stats.dropped['bad-crc']).toBe(2);
    expect(decoder.stats.dropped['too-short']).toBe(1);
  });

  it('reports each drop as an event, never as an error', () => {
    const { decoder } = decodeAll(Buffer.alloc(0));
    const drops: DropInfo[] = [];
    let errors = 0;
    decoder.on('drop', (info: DropInfo) => drops.push(info));
    decoder.on('error', () => errors++);
    decoder.write(Buffer.from([0xc0, 1, 2, 3, 0xc0]));
    decoder.write(Buffer.concat([toWire(frame(1)).subarray(0, 12), toWire(frame(2))]));
    expect(drops).toEqual([
      { reason: 'too-short', length: 3 },
      { reason: 'bad-crc', length: 11 },
    ]);
    expect(errors).toBe(0);
  });

  it('bounds its buffer: an endless run without END is dropped as oversize', () => {
    const { frames, decoder } = decodeAll(
      Buffer.concat([Buffer.alloc(100_000, 0x00), toWire(frame(4, { big: 'x'.repeat(80) }))]),
      { maxPayload: 64, chunk: 4096 },
    );
    expect(decoder.stats.dropped.oversize).toBe(2); // the zeros, and the 90-byte payload
    expect(decoder.stats.droppedBytes).toBe(2 * (64 + 9));
    expect(frames).toEqual([]);
    const { frames: after } = decodeAll(
      Buffer.concat([Buffer.alloc(1000, 0x00), toWire(frame(5, { ok: 1 }))]),
      { maxPayload: 64 },
    );
    expect(seqs(after)).toEqual([5]);
  });

  it('carries payload bytes equal to END and ESC', () => {
    const raw: Frame = {
      type: 'DATA',
      seq: 1,
      payload: Buffer.from([0xc0, 0xdb, 0xdc, 0xdd, 0xc0]),
    };
    expect(decodeAll(toWire(raw), { chunk: 1 }).frames).toEqual([raw]);
  });
});
