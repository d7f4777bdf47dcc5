import { crc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { SlipEncoder } from '@serialport/parser-slip-encoder';
import { decodePacket, encodePacket, wireLength, type Frame } from './codec.js';
import { toWire } from './testing/wire.js';

const data = (seq: number, text: string, syn = false): Frame => ({
  type: 'DATA',
  seq,
  ...(syn ? { syn } : {}),
  payload: Buffer.from(text, 'utf8'),
});

/** Rebuilds a packet's CRC after editing it, to reach the checks behind the CRC. */
function withFreshCrc(packet: Buffer): Buffer {
  const copy = Buffer.from(packet);
  copy.writeUInt32BE(crc32(copy.subarray(0, copy.length - 4)), copy.length - 4);
  return copy;
}

describe('packet codec', () => {
  it('lays out an ACK as version, type, seq, length and CRC-32', () => {
    expect(encodePacket({ type: 'ACK', seq: 5, payload: Buffer.alloc(0) }).toString('hex')).toBe(
      '01020500005780d4cd',
    );
  });

  it('escapes END and ESC on the wire, with END before and after', () => {
    // This packet's CRC ends in 0xC0, which must travel as DB DC.
    const frame = data(0x2a, '{}', true);
    expect(encodePacket(frame).toString('hex')).toBe('01812a00027b7d847d5dc0');
    expect(toWire(frame).toString('hex')).toBe('c001812a00027b7d847d5ddbdcc0');
    expect(wireLength(encodePacket(frame))).toBe(14);
  });

  it('round-trips every frame type, both SYN states and a UTF-8 payload', () => {
    const frames: Frame[] = [
      data(0, '{"v":1,"type":"status.query"}', true),
      data(255, '{"screen_text":"Kort godkjent — takk"}'),
      { type: 'ACK', seq: 17, payload: Buffer.alloc(0) },
      { type: 'NAK', seq: 18, payload: Buffer.from('{"reason":"bad"}') },
    ];
    for (const frame of frames) {
      expect(decodePacket(encodePacket(frame))).toEqual({ ok: true, frame });
    }
  });

  it('detects every single-bit error in a packet', () => {
    const packet = encodePacket(data(9, '{"v":1,"type":"last_transaction.query"}'));
    for (let bit = 0; bit < packet.length * 8; bit++) {
      const damaged = Buffer.from(packet);
      damaged[bit >> 3] = (damaged[bit >> 3] ?? 0) ^ (1 << (bit & 7));
      expect(decodePacket(damaged).ok, `bit ${bit}`).toBe(false);
    }
  });

  it('names the reason for each kind of bad packet', () => {
    const good = encodePacket(data(1, '{"a":1}'));
    const edit = (at: number, value: number) => {
      const copy = Buffer.from(good);
      copy[at] = value;
      return withFreshCrc(copy);
    };
    expect(decodePacket(good.subarray(0, 8))).toEqual({ ok: false, reason: 'too-short' });
    expect(decodePacket(Buffer.concat([good, Buffer.from([0])]))).toEqual({
      ok: false,
      reason: 'bad-crc',
    });
    expect(decodePacket(edit(0, 2))).toEqual({ ok: false, reason: 'bad-version' });
    expect(decodePacket(edit(1, 0x04))).toEqual({ ok: false, reason: 'bad-type' });
    expect(decodePacket(edit(1, 0x82))).toEqual({ ok: false, reason: 'bad-type' }); // SYN on an ACK
    expect(decodePacket(edit(1, 0x41))).toEqual({ ok: false, reason: 'bad-type' }); // unknown flag
    expect(decodePacket(edit(4, 8))).toEqual({ ok: false, reason: 'bad-length' });
    expect(decodePacket(good, 6)).toEqual({ ok: false, reason: 'oversize' });
  });

  it('refuses to encode a seq outside 0-255 or SYN on an answer', () => {
    expect(() => encodePacket(data(256, ''))).toThrow(RangeError);
    expect(() =>
      encodePacket({ type: 'ACK', seq: 1, syn: true, payload: Buffer.alloc(0) }),
    ).toThrow(/SYN/);
  });

  it('puts on the wire what node-serialport SLIP-encodes, behind a leading END', () => {
    const packet = encodePacket({ type: 'DATA', seq: 3, payload: Buffer.from([0xc0, 0xdb, 0xdc]) });
    const library = new SlipEncoder();
    let plain: Buffer = Buffer.alloc(0);
    library._transform(packet, 'binary', (_error, out) => (plain = out as Buffer));
    expect(toWire(packet)).toEqual(Buffer.concat([Buffer.from([0xc0]), plain]));
  });
});
