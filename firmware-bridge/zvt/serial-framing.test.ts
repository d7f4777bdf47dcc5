import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fromHex, hexBytes } from './apdu.js';
import { crc16Kermit, frameCrc } from './crc.js';
import { ZvtFrameDecoder, type DropInfo, type SerialUnit } from './serial-frame-decoder.js';
import { frameApdu, ZvtFrameEncoder } from './serial-frame-encoder.js';
import { PROPERTY, bytes } from './testing/arbitraries.js';
import { SERIAL_FRAMES } from './testing/vectors.js';

/** Feeds bytes to a fresh decoder in chunks and returns the units and drops. */
function decodeAll(input: Buffer, chunk = input.length || 1, maxApduLength?: number) {
  const decoder = new ZvtFrameDecoder({ maxApduLength });
  const units: SerialUnit[] = [];
  const drops: DropInfo[] = [];
  decoder.on('data', (unit: SerialUnit) => units.push(unit));
  decoder.on('drop', (info: DropInfo) => drops.push(info));
  for (let at = 0; at < input.length; at += chunk) {
    decoder._transform(input.subarray(at, at + chunk), 'binary', (error) => {
      if (error) throw error;
    });
  }
  return { units, drops, decoder };
}

const frame = (apdu: Buffer): SerialUnit => ({ type: 'frame', apdu });

describe('ZVT serial framing', () => {
  it('computes the CRC-16/KERMIT of the notes (check value 0x2189)', () => {
    expect(crc16Kermit(Buffer.from('123456789'))).toBe(0x2189);
    expect(frameCrc(fromHex('80 00 00'))).toBe(0x1ff5);
  });

  it.each(SERIAL_FRAMES.map((vector) => [vector.id, vector] as const))(
    'frames and unframes %s byte for byte',
    (_id, vector) => {
      expect(hexBytes(frameApdu(vector.apdu))).toBe(hexBytes(vector.frame));
      expect(decodeAll(vector.frame).units).toEqual([frame(vector.apdu)]);
      expect(decodeAll(vector.frame, 1).units).toEqual([frame(vector.apdu)]);
    },
  );

  it('writes frames and link answers through one encoder, in order', async () => {
    const encoder = new ZvtFrameEncoder();
    const out: Buffer[] = [];
    encoder.on('data', (chunk: Buffer) => out.push(chunk));
    encoder.write('ACK');
    encoder.write(fromHex('80 00 00'));
    encoder.write('NAK');
    await new Promise((resolve) => setImmediate(resolve));
    expect(hexBytes(Buffer.concat(out))).toBe('06 10 02 80 00 00 10 03 F5 1F 15');
  });

  it('reads ACK and NAK bytes between frames and counts noise', () => {
    const { units, decoder } = decodeAll(fromHex('AA 06 10 41 15 10 02 80 00 00 10 03 F5 1F FF'));
    expect(units).toEqual([{ type: 'ack' }, { type: 'nak' }, frame(fromHex('80 00 00'))]);
    expect(decoder.stats).toMatchObject({ noiseBytes: 4, acks: 1, naks: 1, frames: 1 });
  });

  it('answers damaged complete frames (bad CRC, bad escape, oversize) and drops half frames', () => {
    const badCrc = fromHex('10 02 80 00 00 10 03 F5 1E');
    const badEscape = fromHex('10 02 80 10 41 00 00 10 03 F5 1F');
    const half = fromHex('10 02 04 FF 01');
    const good = frameApdu(fromHex('06 0F 00'));
    const { units, drops, decoder } = decodeAll(Buffer.concat([badCrc, badEscape, half, good]), 3);
    expect(units).toEqual([
      { type: 'bad-frame', reason: 'crc' },
      { type: 'bad-frame', reason: 'escape' },
      frame(fromHex('06 0F 00')),
    ]);
    expect(drops).toEqual([{ reason: 'half-frame', bytes: 5 }]);
    expect(decoder.stats.halfFrames).toBe(1);
    const oversize = decodeAll(frameApdu(Buffer.alloc(40, 0x41)), 7, 16);
    expect(oversize.units).toEqual([{ type: 'bad-frame', reason: 'oversize' }]);
  });

  it('drops a half frame on reset() (the line went silent mid-frame)', () => {
    const { units, decoder } = decodeAll(fromHex('10 02 04 FF 01'));
    expect(decoder.inFrame).toBe(true);
    decoder.reset();
    expect(decoder.inFrame).toBe(false);
    decoder._transform(frameApdu(fromHex('80 00 00')), 'binary', () => {});
    expect(units).toEqual([frame(fromHex('80 00 00'))]);
    expect(decoder.stats.halfFrames).toBe(1);
  });

  it('recovers every frame from noise between frames, in any chunking (property)', () => {
    const noise = bytes(0, 12).map((b) =>
      Buffer.from(b.filter((x) => x !== 0x10 && x !== 0x06 && x !== 0x15)),
    );
    fc.assert(
      fc.property(
        fc.array(fc.tuple(noise, bytes(0, 300)), { minLength: 1, maxLength: 6 }),
        fc.integer({ min: 1, max: 64 }),
        (pieces, chunk) => {
          const wire = Buffer.concat(pieces.flatMap(([junk, apdu]) => [junk, frameApdu(apdu)]));
          const { units } = decodeAll(wire, chunk);
          expect(units).toEqual(pieces.map(([, apdu]) => frame(apdu)));
        },
      ),
      PROPERTY,
    );
  });

  it('never throws and never emits more frames than were sent, whatever the damage (property)', () => {
    fc.assert(
      fc.property(bytes(0, 400), (garbage) => {
        const { units } = decodeAll(garbage, 5);
        for (const unit of units)
          if (unit.type === 'frame') expect(unit.apdu.length).toBeLessThan(garbage.length);
      }),
      PROPERTY,
    );
  });
});
