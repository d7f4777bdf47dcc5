import net from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MessageRate, PacketScanner, limitPacketSize } from './listener-limits.js';

/** An MQTT packet's bytes: a type byte, the remaining length (1-4 bytes), the body. */
function packet(bodyLength: number): Buffer {
  const length: number[] = [];
  let rest = bodyLength;
  do {
    let byte = rest % 128;
    rest = Math.floor(rest / 128);
    if (rest > 0) byte |= 0x80;
    length.push(byte);
  } while (rest > 0);
  return Buffer.concat([Buffer.from([0x30, ...length]), Buffer.alloc(bodyLength, 7)]);
}

/** The stream cut into chunks at the given points. */
function chunks(stream: Buffer, cuts: number[]): Buffer[] {
  const points = [...new Set(cuts.map((c) => c % (stream.length + 1)))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let from = 0;
  for (const point of [...points, stream.length]) {
    if (point > from) out.push(stream.subarray(from, point));
    from = Math.max(from, point);
  }
  return out;
}

describe('PacketScanner', () => {
  it('passes packets within the limit and stops at the first one over it, however the bytes are cut', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 20_000 }), { minLength: 1, maxLength: 8 }),
        fc.array(fc.nat(), { maxLength: 20 }),
        (bodies, cuts) => {
          const max = 10_000;
          const packets = bodies.map(packet);
          const firstOver = packets.findIndex((p) => p.length > max);
          const scanner = new PacketScanner(max);
          let answer: number | undefined;
          for (const chunk of chunks(Buffer.concat(packets), cuts)) {
            answer = scanner.feed(chunk);
            if (answer !== undefined) break;
          }
          expect(answer).toBe(firstOver < 0 ? undefined : packets[firstOver]!.length);
        },
      ),
    );
  });

  it('answers at the header of a 256 MB packet, and -1 for a length of 5 bytes', () => {
    expect(new PacketScanner(65_536).feed(Buffer.from([0x10, 0xff, 0xff, 0xff, 0x7f]))).toBe(
      268_435_460,
    );
    expect(new PacketScanner(65_536).feed(Buffer.from([0x10, 0xff, 0xff, 0xff, 0xff]))).toBe(-1);
  });
});

describe('MessageRate', () => {
  it('allows a burst of perMinute, then perMinute a minute, per terminal', () => {
    let now = 0;
    const rate = new MessageRate(60, () => now);
    for (let i = 0; i < 60; i++) expect(rate.take('t-1')).toBe(true);
    expect(rate.take('t-1')).toBe(false);
    expect(rate.take('t-2')).toBe(true);
    now = 1000;
    expect(rate.take('t-1')).toBe(true);
    expect(rate.take('t-1')).toBe(false);
  });
});

/** A connected pair of sockets: the server's side and the client's. */
async function socketPair(): Promise<{ socket: net.Socket; client: net.Socket; close(): void }> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  const accepted = new Promise<net.Socket>((resolve) => server.once('connection', resolve));
  const client = net.connect(port, '127.0.0.1');
  const socket = await accepted;
  return {
    socket,
    client,
    close() {
      client.destroy();
      socket.destroy();
      server.close();
    },
  };
}

describe('limitPacketSize', () => {
  it('checks in the socket itself: no stream in front of it, no listener on it', async () => {
    const { socket, close } = await socketPair();
    try {
      const events = ['data', 'end', 'error', 'close', 'finish', 'drain', 'readable'];
      const listeners = events.map((e) => socket.listenerCount(e));
      const conn = limitPacketSize(socket, 1024, () => undefined);
      // A stream, a pipeline and a Duplex per connection cost the relay kilobytes an agent.
      expect(conn).toBe(socket);
      expect(events.map((e) => socket.listenerCount(e))).toEqual(listeners);
    } finally {
      close();
    }
  });

  it('hands the reader the packets within the limit, and none of the stream from one over it', async () => {
    const { socket, client, close } = await socketPair();
    try {
      const declared: number[] = [];
      const conn = limitPacketSize(socket, 1024, (size) => declared.push(size));
      const read: Buffer[] = [];
      const failed = new Promise<Error>((resolve) => conn.once('error', resolve));
      conn.on('readable', () => {
        for (let chunk = conn.read() as Buffer | null; chunk; chunk = conn.read() as Buffer | null)
          read.push(chunk);
      });
      client.write(packet(100));
      await new Promise((resolve) => setTimeout(resolve, 50));
      client.write(Buffer.concat([packet(10), packet(5000)]));
      expect((await failed).message).toMatch(/5003 bytes refused/);
      expect(declared).toEqual([5003]);
      expect(Buffer.concat(read)).toEqual(packet(100));
      expect(socket.destroyed).toBe(true);
    } finally {
      close();
    }
  });

  it('holds what is written while corked in the socket, to leave in one write', async () => {
    const { socket, client, close } = await socketPair();
    try {
      const conn = limitPacketSize(socket, 1024, () => undefined);
      conn.on('error', () => undefined);
      // As mqtt-packet writes a packet: corked, piece by piece, uncorked on the next tick.
      conn.cork();
      conn.write(Buffer.from([0x30, 3]));
      conn.write(Buffer.from('abc'));
      expect(socket.writableCorked).toBe(1);
      expect(socket.writableLength).toBe(5);
      const received = new Promise<Buffer>((resolve) => client.once('data', resolve));
      process.nextTick(() => conn.uncork());
      expect((await received).length).toBe(5);
    } finally {
      close();
    }
  });

  it('sends what one turn of the loop writes across ticks in one write', async () => {
    const { socket, client, close } = await socketPair();
    try {
      const conn = limitPacketSize(socket, 1024, () => undefined);
      // Counted where the socket hands its buffer to the system, as the bench counts.
      const counted = conn as net.Socket & { _writev: unknown; _write: unknown };
      let writes = 0;
      for (const name of ['_writev', '_write'] as const) {
        const original = counted[name] as (...args: unknown[]) => unknown;
        counted[name] = (...args: unknown[]) => {
          writes++;
          return original.apply(conn, args);
        };
      }
      let bytes = 0;
      const received = new Promise<void>((resolve) =>
        client.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (bytes === 9) resolve();
        }),
      );
      // As an agent's connect is answered: a packet, then another a few ticks later, each
      // corked and uncorked on the next tick as mqtt-packet does.
      const writePacket = (bytes: Buffer) => {
        conn.cork();
        conn.write(bytes);
        process.nextTick(() => conn.uncork());
      };
      writePacket(Buffer.from([0x20, 2, 0, 0])); // CONNACK
      process.nextTick(() => process.nextTick(() => writePacket(Buffer.from([0x90, 3, 0, 1, 0]))));
      await received;
      expect(writes).toBe(1);
    } finally {
      close();
    }
  });
});
