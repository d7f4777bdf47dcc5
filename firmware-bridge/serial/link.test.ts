import { describe, expect, it } from 'vitest';
import type { Frame } from './codec.js';
import { FrameDecoder } from './decoder.js';
import { SerialLinkError } from './errors.js';
import { SerialLink, type LinkRole, type SerialLinkOptions } from './link.js';
import { hostSamples, readerSamples } from './message-samples.js';
import type { HostMessage, ReaderMessage } from './messages.js';
import { createStreamPair, type LineFaults, type StreamPair } from './stream-pair.js';
import { json, toWire } from './testing/wire.js';
import { ManualTimers } from '../../common/testing/manual-timers.js';

type Extra<R extends LinkRole> = Omit<SerialLinkOptions<R>, 'role'>;

function linkPair(
  options: {
    seed?: number;
    line?: LineFaults;
    host?: Extra<'host'>;
    reader?: Extra<'reader'>;
  } = {},
) {
  const pair = createStreamPair({ seed: options.seed, aToB: options.line, bToA: options.line });
  const timers = new ManualTimers();
  const host = new SerialLink(pair.a, { role: 'host', timers, ...options.host });
  const reader = new SerialLink(pair.b, { role: 'reader', timers, ...options.reader });
  return { pair, timers, host, reader };
}

/** Lets the line go quiet, then lets the earliest timeout expire, until `done()`. */
async function drive(pair: StreamPair, timers: ManualTimers, done: () => boolean): Promise<number> {
  for (let fired = 0; fired < 50_000; fired++) {
    await pair.idle();
    if (done()) return fired;
    if (!timers.fireNext()) throw new Error('stuck: the line is idle and no timer is pending');
  }
  throw new Error('did not finish');
}

/** A side of the line driven by hand: what arrived there, and a way to write frames. */
function rawPeer(pair: StreamPair) {
  const decoder = new FrameDecoder();
  const frames: Frame[] = [];
  pair.b.pipe(decoder).on('data', (frame: Frame) => frames.push(frame));
  return { frames, write: (...out: Frame[]) => pair.b.write(toWire(...out)) };
}

/** A side of the line driven by hand, facing a reader link on the other side. */
function rawHost(pair: StreamPair) {
  const decoder = new FrameDecoder();
  const frames: Frame[] = [];
  pair.a.pipe(decoder).on('data', (frame: Frame) => frames.push(frame));
  return { frames, write: (...out: Frame[]) => pair.a.write(toWire(...out)) };
}

const statusQuery: HostMessage = { v: 1, type: 'status.query' };
const ack = (seq: number): Frame => ({ type: 'ACK', seq, payload: Buffer.alloc(0) });
const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (error: unknown) => error as SerialLinkError,
  );

describe('SerialLink', () => {
  it('round-trips every message type both ways (real timers, clean line)', async () => {
    const pair = createStreamPair();
    const host = new SerialLink(pair.a, { role: 'host' });
    const reader = new SerialLink(pair.b, { role: 'reader' });
    const atReader: HostMessage[] = [];
    const atHost: ReaderMessage[] = [];
    reader.on('message', (m) => atReader.push(m));
    host.on('message', (m) => atHost.push(m));
    await Promise.all([
      ...hostSamples.map((m) => host.send(m)),
      ...readerSamples.map((m) => reader.send(m)),
    ]);
    expect(atReader).toEqual(hostSamples);
    expect(atHost).toEqual(readerSamples);
    expect(host.stats).toMatchObject({ retransmissions: 0, duplicates: 0 });
    expect(host.stats.acknowledged).toBe(hostSamples.length);
    await Promise.all([host.close(), reader.close()]);
  });

  it.each([1, 2, 3])(
    'delivers every message once and in order over a noisy line (seed %i)',
    async (seed) => {
      const line: LineFaults = { dropRate: 0.003, flipRate: 0.003, garbageRate: 0.1, maxChunk: 7 };
      const { pair, timers, host, reader } = linkPair({
        seed,
        line,
        host: { maxRetries: 30, initialSeq: 240 },
        reader: { maxRetries: 30, initialSeq: 17 },
      });
      const fromHost: HostMessage[] = Array.from({ length: 40 }, (_, i) => ({
        v: 1,
        type: 'transaction.start',
        transaction_id: `tx-${seed}-${i}`,
        kind: 'PURCHASE',
        requested_amount: 100 + i,
        currency: 'EUR',
        pause_on_customer_identified: i % 2 === 0,
      }));
      const fromReader: ReaderMessage[] = Array.from({ length: 40 }, (_, i) => ({
        v: 1,
        type: 'transaction.progress',
        transaction_id: `tx-${seed}-${i}`,
        screen_text: `Step ${i}: please wait`,
      }));
      const atReader: HostMessage[] = [];
      const atHost: ReaderMessage[] = [];
      reader.on('message', (m) => atReader.push(m));
      host.on('message', (m) => atHost.push(m));
      let settled = 0;
      const outcomes = [
        ...fromHost.map((m) => host.send(m)),
        ...fromReader.map((m) => reader.send(m)),
      ].map((p) => p.finally(() => settled++));

      const timeouts = await drive(pair, timers, () => settled === outcomes.length);

      await expect(Promise.all(outcomes)).resolves.toBeDefined();
      expect(atReader).toEqual(fromHost);
      expect(atHost).toEqual(fromReader);
      // The line really was bad, and the link really had to work for it.
      for (const stats of [pair.stats.aToB, pair.stats.bToA]) {
        expect(stats.droppedBytes).toBeGreaterThan(0);
        expect(stats.flippedBytes).toBeGreaterThan(0);
        expect(stats.garbageBytes).toBeGreaterThan(0);
      }
      const dropped = (link: typeof host | typeof reader) =>
        Object.values(link.stats.decoder.dropped).reduce((a, b) => a + b, 0);
      expect(dropped(host) + dropped(reader)).toBeGreaterThan(10);
      expect(host.stats.retransmissions + reader.stats.retransmissions).toBeGreaterThan(10);
      expect(host.stats.duplicates + reader.stats.duplicates).toBeGreaterThan(0);
      expect(timeouts).toBeGreaterThan(10);
    },
  );

  it('gives up with ACK_TIMEOUT, disconnected, after 1 + maxRetries transmissions', async () => {
    const pair = createStreamPair();
    const timers = new ManualTimers();
    const host = new SerialLink(pair.a, { role: 'host', timers, initialSeq: 7 });
    const peer = rawPeer(pair);
    const failure = rejection(host.send(statusQuery));
    const firings = await drive(pair, timers, () => timers.size === 0 && peer.frames.length > 0);
    const error = await failure;

    expect(error).toBeInstanceOf(SerialLinkError);
    expect(error).toMatchObject({ code: 'ACK_TIMEOUT', disconnected: true });
    expect(error.message).toMatch(/status\.query \(seq 7\) after 6 transmissions.*may or may not/);
    expect(firings).toBe(6);
    expect(peer.frames).toHaveLength(6);
    expect(new Set(peer.frames.map((f) => `${f.seq}/${f.syn}/${f.payload}`))).toEqual(
      new Set(['7/true/{"v":1,"type":"status.query"}']),
    );
    // Each wait is the ack timeout plus the frame's time on the wire at 115200 baud.
    const wireBytes = pair.stats.aToB.bytesWritten / 6;
    expect(timers.now).toBe(6 * (200 + Math.ceil((wireBytes * 10_000) / 115_200)));

    // The link stays usable: the next message gets the next seq, still SYN (no answer yet).
    const next = host.send(statusQuery);
    await pair.idle();
    expect(peer.frames[6]).toMatchObject({ seq: 8, syn: true });
    peer.write(ack(8));
    await next;
  });

  it('retransmits the same frame when the ACK is missing, and ignores stale ACKs', async () => {
    const pair = createStreamPair();
    const timers = new ManualTimers();
    const host = new SerialLink(pair.a, { role: 'host', timers, initialSeq: 255 });
    const peer = rawPeer(pair);
    let done = false;
    const sent = host.send(statusQuery).then(() => (done = true));
    await pair.idle();
    expect(timers.fireNext()).toBe(true);
    await pair.idle();
    expect(peer.frames).toHaveLength(2);
    expect(peer.frames[1]).toEqual(peer.frames[0]);
    peer.write(ack(254)); // answers nothing outstanding
    await pair.idle();
    expect(done).toBe(false);
    peer.write(ack(255));
    await sent;
    expect(host.stats).toMatchObject({ transmissions: 2, retransmissions: 1, staleAnswers: 1 });

    // The answer ended the SYN phase; seq wraps from 255 to 0.
    const second = host.send({ v: 1, type: 'last_transaction.query' });
    await pair.idle();
    expect(peer.frames[2]).toMatchObject({ type: 'DATA', seq: 0 });
    expect(peer.frames[2]?.syn).toBeUndefined();
    peer.write(ack(0));
    await second;
    expect(timers.size).toBe(0);
  });

  it('answers a retransmitted frame again without delivering it twice', async () => {
    const pair = createStreamPair();
    const reader = new SerialLink(pair.b, { role: 'reader', timers: new ManualTimers() });
    const delivered: HostMessage[] = [];
    reader.on('message', (m) => delivered.push(m));
    const refusals: string[] = [];
    reader.on('refused', ({ reason }) => refusals.push(reason));
    const host = rawHost(pair);
    const query = json(statusQuery);
    const lastTx = json({ v: 1, type: 'last_transaction.query' });
    const sendTwice = async (frame: Frame) => {
      host.write(frame);
      await pair.idle();
      host.write(frame);
      await pair.idle();
    };

    await sendTwice({ type: 'DATA', seq: 42, syn: true, payload: query });
    await sendTwice({ type: 'DATA', seq: 43, payload: lastTx });
    // A restarted host: a new session whose first frame (SYN) reuses seq 43.
    await sendTwice({ type: 'DATA', seq: 43, syn: true, payload: query });
    // A refused frame, retransmitted, gets the same NAK and is not judged twice.
    await sendTwice({ type: 'DATA', seq: 44, payload: Buffer.from('{"v":1,"type":"nope"') });

    expect(delivered).toEqual([statusQuery, { v: 1, type: 'last_transaction.query' }, statusQuery]);
    expect(host.frames.map((f) => `${f.type} ${f.seq}`)).toEqual([
      'ACK 42',
      'ACK 42',
      'ACK 43',
      'ACK 43',
      'ACK 43',
      'ACK 43',
      'NAK 44',
      'NAK 44',
    ]);
    expect(refusals).toHaveLength(1);
    expect(refusals[0]).toMatch(/^payload is not UTF-8 JSON: /);
    expect(host.frames[7]?.payload).toEqual(host.frames[6]?.payload);
    expect(reader.stats).toMatchObject({ delivered: 3, duplicates: 4, refused: 1 });
  });

  it('rejects with REJECTED and the reason when the peer refuses a message', async () => {
    // Two hosts: each expects reader messages, so each refuses what the other sends.
    const pair = createStreamPair();
    const host = new SerialLink(pair.a, { role: 'host' });
    const wrongPeer = new SerialLink(pair.b, { role: 'host' });
    const seen: unknown[] = [];
    wrongPeer.on('message', (m) => seen.push(m));
    const refused: string[] = [];
    wrongPeer.on('refused', ({ reason }) => refused.push(reason));
    const error = await rejection(host.send(statusQuery));
    expect(error).toMatchObject({ code: 'REJECTED', disconnected: false });
    expect(error.reason).toMatch(/^type: Invalid discriminator value/);
    expect(error.message).toContain('the peer refused status.query: type: Invalid discriminator');
    expect(refused).toEqual([error.reason]);
    expect(seen).toEqual([]);
    expect(host.stats.retransmissions).toBe(0);
  });

  it('refuses to send an invalid or oversize message, and sends nothing', async () => {
    const pair = createStreamPair();
    const host = new SerialLink(pair.a, { role: 'host', maxPayload: 100 });
    const invalid = await rejection(
      host.send({ ...(hostSamples[0] as HostMessage), currency: 'eur' } as HostMessage),
    );
    expect(invalid).toMatchObject({ code: 'INVALID_MESSAGE', disconnected: false });
    expect(invalid.reason).toBe('currency: must be 3 uppercase letters A-Z');
    const big = await rejection(host.send(hostSamples[0] as HostMessage));
    expect(big.code).toBe('PAYLOAD_TOO_LARGE');
    expect(big.message).toMatch(
      /^transaction\.start is \d+ bytes of JSON, over the 100 byte limit$/,
    );
    await pair.idle();
    expect(pair.stats.aToB.bytesWritten).toBe(0);
  });

  it('holds acknowledged messages until a consumer comes, up to maxBacklog', async () => {
    const { pair, host, reader } = linkPair({ reader: { maxBacklog: 2 } });
    await host.send(hostSamples[0] as HostMessage);
    await host.send(hostSamples[3] as HostMessage);
    const full = await rejection(host.send(statusQuery));
    expect(full).toMatchObject({
      code: 'REJECTED',
      reason: 'receiver backlog full (2 unread messages)',
    });

    const iterator = reader.messages();
    expect((await iterator.next()).value).toEqual(hostSamples[0]);
    expect((await iterator.next()).value).toEqual(hostSamples[3]);
    const third = iterator.next();
    await host.send(hostSamples[5] as HostMessage);
    expect((await third).value).toEqual(hostSamples[5]);
    await reader.close();
    expect(await iterator.next()).toEqual({ value: undefined, done: true });
    await pair.idle();
  });

  it('fails pending sends with PORT_CLOSED when the cable is pulled', async () => {
    const { pair, host } = linkPair();
    const closed: unknown[] = [];
    host.on('close', (error) => closed.push(error));
    const pending = rejection(host.send(statusQuery));
    const queued = rejection(host.send(statusQuery));
    pair.b.destroy(); // destroys both ends, as a pulled cable
    for (const error of [await pending, await queued]) {
      expect(error).toMatchObject({ code: 'PORT_CLOSED', disconnected: true });
    }
    expect(closed).toHaveLength(1);
    expect(closed[0]).toMatchObject({ code: 'PORT_CLOSED', disconnected: true });
    expect((await rejection(host.send(statusQuery))).code).toBe('LINK_CLOSED');
  });

  it('names the port error that ended the link', async () => {
    const { pair, host } = linkPair();
    const pending = rejection(host.send(statusQuery));
    pair.a.destroy(new Error('read EIO'));
    const error = await pending;
    expect(error).toMatchObject({ code: 'PORT_CLOSED', disconnected: true });
    expect(error.message).toBe('the serial port closed: read EIO');
    expect((error.cause as Error).message).toBe('read EIO');
  });

  it('close() rejects queued sends, ends iterators, and still delivers its last ACK', async () => {
    const { pair, timers, host, reader } = linkPair();
    // The reader closes as soon as it has the first message: its ACK must still go out.
    reader.once('message', () => void reader.close());
    const first = host.send(statusQuery);
    await drive(pair, timers, () => host.stats.acknowledged === 1);
    await first;

    const iterator = host.messages();
    const ended = iterator.next();
    const queued = [host.send(statusQuery), host.send(statusQuery)].map(rejection);
    await host.close();
    for (const error of await Promise.all(queued)) {
      expect(error).toMatchObject({ code: 'LINK_CLOSED', disconnected: false });
    }
    expect(await ended).toEqual({ value: undefined, done: true });
    expect((await rejection(host.send(statusQuery))).code).toBe('LINK_CLOSED');
    expect(timers.size).toBe(0);
  });
});
