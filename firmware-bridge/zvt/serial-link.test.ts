import { describe, expect, it } from 'vitest';
import { createStreamPair, type LineFaults, type StreamPair } from '../serial/stream-pair.js';
import { ManualTimers } from '../../common/testing/manual-timers.js';
import { fromHex, hexBytes } from './apdu.js';
import type { ZvtError } from './errors.js';
import { ZvtFrameDecoder, type SerialUnit } from './serial-frame-decoder.js';
import { frameApdu } from './serial-frame-encoder.js';
import { ZvtSerialLink, type ZvtSerialLinkOptions } from './serial-link.js';

function linkPair(options: { seed?: number; line?: LineFaults; link?: ZvtSerialLinkOptions } = {}) {
  const { pair, timers, ecr } = ecrOnly(options);
  const pt = new ZvtSerialLink(pair.b, { timers, ...options.link });
  return { pair, timers, ecr, pt };
}

/** An ECR link whose peer is driven by hand (rawPeer). */
function ecrOnly(options: { seed?: number; line?: LineFaults; link?: ZvtSerialLinkOptions } = {}) {
  const pair = createStreamPair({ seed: options.seed, aToB: options.line, bToA: options.line });
  const timers = new ManualTimers();
  const ecr = new ZvtSerialLink(pair.a, { timers, ...options.link });
  return { pair, timers, ecr };
}

/** Lets the line go quiet, then lets the earliest timer expire, until `done()`. */
async function drive(pair: StreamPair, timers: ManualTimers, done: () => boolean): Promise<void> {
  for (let fired = 0; fired < 20_000; fired++) {
    await pair.idle();
    if (done()) return;
    if (!timers.fireNext()) throw new Error('stuck: the line is idle and no timer is pending');
  }
  throw new Error('did not finish');
}

/** The PT end driven by hand: what arrived as units, and raw writes. */
function rawPeer(pair: StreamPair) {
  const decoder = new ZvtFrameDecoder();
  const units: SerialUnit[] = [];
  pair.b.pipe(decoder).on('data', (unit: SerialUnit) => units.push(unit));
  return {
    units,
    write: (hex: string | Buffer) => pair.b.write(typeof hex === 'string' ? fromHex(hex) : hex),
  };
}

const collect = (link: ZvtSerialLink) => {
  const received: string[] = [];
  link.on('apdu', (apdu) => received.push(hexBytes(apdu)));
  return received;
};

const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error as ZvtError,
  );

describe('ZvtSerialLink', () => {
  it('carries APDUs both ways with link ACKs (real timers, clean line)', async () => {
    const pair = createStreamPair();
    const ecr = new ZvtSerialLink(pair.a);
    const pt = new ZvtSerialLink(pair.b);
    const atPt = collect(pt);
    const atEcr = collect(ecr);
    await ecr.send(fromHex('06 01 0A 04 00 00 00 01 10 00 49 09 78'));
    await pt.send(fromHex('80 00 00'));
    await pt.send(fromHex('06 0F 00'));
    await ecr.send(fromHex('80 00 00'));
    expect(atPt).toEqual(['06 01 0A 04 00 00 00 01 10 00 49 09 78', '80 00 00']);
    expect(atEcr).toEqual(['80 00 00', '06 0F 00']);
    expect(ecr.stats).toMatchObject({ acknowledged: 2, retransmissions: 0, implicitAcks: 0 });
    await ecr.close();
    await pt.close();
  });

  it('retransmits at once on NAK and after a corrupted CRC, delivering once', async () => {
    const { pair, timers, ecr } = ecrOnly();
    const peer = rawPeer(pair);
    const sent = ecr.send(fromHex('06 B0 00'));
    await pair.idle();
    expect(peer.units).toEqual([{ type: 'frame', apdu: fromHex('06 B0 00') }]);
    peer.write('15');
    await pair.idle();
    expect(peer.units).toHaveLength(2);
    peer.write('06');
    await sent;
    expect(ecr.stats).toMatchObject({ naksReceived: 1, retransmissions: 1, acknowledged: 1 });
    // Receiving: a bad CRC is answered with NAK, the retransmission with ACK.
    const atEcr = collect(ecr);
    peer.write('10 02 80 00 00 10 03 F5 1E');
    await pair.idle();
    peer.write('10 02 80 00 00 10 03 F5 1F');
    await pair.idle();
    expect(peer.units.slice(2)).toEqual([{ type: 'nak' }, { type: 'ack' }]);
    expect(atEcr).toEqual(['80 00 00']);
    expect(timers.size).toBe(0);
  });

  it('gives up after maxRetries without an answer: delivery unknown', async () => {
    const { pair, timers, ecr } = ecrOnly({ link: { maxRetries: 2 } });
    const peer = rawPeer(pair);
    const error = rejection(ecr.send(fromHex('06 50 03 12 34 56')));
    await drive(pair, timers, () => ecr.stats.transmissions === 3 && timers.size === 0);
    expect(await error).toMatchObject({
      code: 'NO_LINK_ACK',
      disconnected: true,
      outcomeUnknown: true,
    });
    expect(peer.units.filter((u) => u.type === 'frame')).toHaveLength(3);
    // The link goes on with the next APDU.
    const next = ecr.send(fromHex('80 00 00'));
    await pair.idle();
    peer.write('06');
    await next;
  });

  it('takes the peer’s frame for the missing ACK (Ingenico) and does not deliver repeats twice', async () => {
    const { pair, ecr } = ecrOnly();
    const peer = rawPeer(pair);
    const atEcr = collect(ecr);
    const sent = ecr.send(fromHex('06 01 07 04 00 00 00 00 10 00'));
    await pair.idle();
    peer.write(frameApdu(fromHex('80 00 00')));
    await sent;
    expect(ecr.stats.implicitAcks).toBe(1);
    // Our ACK was lost: the PT sends 04 FF twice. The ECR acknowledges both, delivers one.
    peer.write(frameApdu(fromHex('04 FF 01 17')));
    peer.write(frameApdu(fromHex('04 FF 01 17')));
    await pair.idle();
    expect(atEcr).toEqual(['80 00 00', '04 FF 01 17']);
    expect(ecr.stats.duplicates).toBe(1);
    expect(peer.units.filter((u) => u.type === 'ack')).toHaveLength(3);
  });

  it('drops a half frame after frameTimeoutMs of silence and reads the next frame', async () => {
    const { pair, timers, ecr } = ecrOnly({ link: { frameTimeoutMs: 500 } });
    const peer = rawPeer(pair);
    const atEcr = collect(ecr);
    peer.write('10 02 04 FF 05 0A 01');
    await pair.idle();
    expect(timers.fireNext()).toBe(true);
    peer.write('06');
    peer.write(frameApdu(fromHex('06 1E 01 6C')));
    await pair.idle();
    expect(atEcr).toEqual(['06 1E 01 6C']);
    expect(ecr.stats.decoder.halfFrames).toBe(1);
    expect(ecr.stats.staleAnswers).toBe(1);
  });

  it('refuses an APDU over maxApduLength and rejects pending sends when the port closes', async () => {
    const { pair, ecr } = linkPair({ link: { maxApduLength: 8 } });
    expect(await rejection(ecr.send(Buffer.alloc(9)))).toMatchObject({ code: 'APDU_TOO_LARGE' });
    const pending = rejection(ecr.send(fromHex('06 B0 00')));
    const closed = new Promise<ZvtError | undefined>((resolve) => ecr.once('close', resolve));
    pair.b.destroy();
    expect(await pending).toMatchObject({ code: 'PORT_CLOSED', disconnected: true });
    expect(await closed).toMatchObject({ code: 'PORT_CLOSED' });
    expect(await rejection(ecr.send(fromHex('06 B0 00')))).toMatchObject({ code: 'CLOSED' });
  });

  it.each([1, 2, 3])(
    'delivers every APDU once, in order, over a noisy line (seed %i)',
    async (seed) => {
      const line: LineFaults = { dropRate: 0.002, flipRate: 0.002, garbageRate: 0.05, maxChunk: 9 };
      const { pair, timers, ecr, pt } = linkPair({ seed, line, link: { maxRetries: 50 } });
      const atPt = collect(pt);
      const atEcr = collect(ecr);
      const apdus = Array.from({ length: 25 }, (_, i) =>
        Buffer.concat([fromHex('04 0F 05 87'), Buffer.from([i >> 8, i & 0xff]), fromHex('27 00')]),
      );
      const outcomes: string[] = [];
      // Turn-taking as ZVT: the PT sends, the ECR answers each with 80 00 00 before the next.
      pt.on('apdu', () => undefined);
      ecr.on(
        'apdu',
        () => void ecr.send(fromHex('80 00 00')).catch((e: Error) => outcomes.push(e.message)),
      );
      void (async () => {
        for (const apdu of apdus) {
          const answered = new Promise((resolve) => pt.once('apdu', resolve));
          await pt.send(apdu).catch((e: Error) => outcomes.push(e.message));
          await answered;
        }
      })();
      await drive(pair, timers, () => atPt.length === apdus.length);
      expect(outcomes).toEqual([]);
      expect(atEcr).toEqual(apdus.map((apdu) => hexBytes(apdu)));
      expect(atPt.every((hex) => hex === '80 00 00')).toBe(true);
      expect(pair.stats.aToB.garbageBytes + pair.stats.bToA.garbageBytes).toBeGreaterThan(0);
    },
  );
});
