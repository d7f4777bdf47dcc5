/**
 * The bounds of the embedded broker's listener (docs/security.md), besides aedes's own
 * CONNECT time-out: the size of any one packet, checked on the declared length in its
 * fixed header before aedes buffers a byte of it; the rate of an agent's messages; and a
 * warning that says what a limit refused without writing one log line per refusal.
 */
import type net from 'node:net';
import { Duplex, Transform, pipeline } from 'node:stream';
import { BoundedMap } from '../bounded-map.js';

/**
 * Follows MQTT's framing (a type byte, the remaining length in 1-4 bytes of 7 bits, the
 * rest) across chunks. `feed` answers the size a packet declares when it is over the
 * limit (or -1 for a malformed length), as soon as its length is known.
 */
export class PacketScanner {
  private state: 'type' | 'length' | 'body' = 'type';
  private length = 0;
  private multiplier = 1;
  private lengthBytes = 0;
  private remaining = 0;

  constructor(private readonly maxBytes: number) {}

  feed(chunk: Buffer): number | undefined {
    let i = 0;
    while (i < chunk.length) {
      if (this.state === 'type') {
        i++;
        this.state = 'length';
        this.length = 0;
        this.multiplier = 1;
        this.lengthBytes = 0;
      } else if (this.state === 'length') {
        const byte = chunk[i++]!;
        this.length += (byte & 0x7f) * this.multiplier;
        this.multiplier *= 128;
        this.lengthBytes++;
        if (byte & 0x80) {
          if (this.lengthBytes === 4) return -1;
          continue;
        }
        const size = 1 + this.lengthBytes + this.length;
        if (size > this.maxBytes) return size;
        this.remaining = this.length;
        this.state = this.remaining > 0 ? 'body' : 'type';
      } else {
        const take = Math.min(this.remaining, chunk.length - i);
        i += take;
        this.remaining -= take;
        if (this.remaining === 0) this.state = 'type';
      }
    }
    return undefined;
  }
}

/**
 * The socket as aedes reads it, with every packet's declared size checked first: a
 * packet over `maxBytes` ends the connection before its body is buffered (a peer could
 * otherwise declare 256 MB and trickle it in). aedes has no such option.
 */
export function limitPacketSize(
  socket: net.Socket,
  maxBytes: number,
  onTooLarge: (declared: number) => void,
): Duplex {
  const scanner = new PacketScanner(maxBytes);
  const checked = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      const declared = scanner.feed(chunk);
      if (declared === undefined) return callback(null, chunk);
      onTooLarge(declared);
      callback(new Error(`MQTT packet of ${declared} bytes refused (limit ${maxBytes})`));
    },
  });
  // Either side failing ends both: the socket is destroyed with the check.
  pipeline(socket, checked, () => socket.destroy());
  const conn = Duplex.from({ readable: checked, writable: socket });
  // The sign-in limits count by the peer's address (embedded-broker.ts).
  Object.defineProperty(conn, 'remoteAddress', { value: socket.remoteAddress });
  // mqtt-packet corks the stream it writes a packet to and uncorks it on the next tick, so
  // that a packet's pieces (header, topic, payload) and the packets of one tick leave in one
  // write. Corked, this wrapper would pass each piece on as a write of its own, each a TCP
  // segment with Nagle off: the socket is corked instead, and pieces go straight through.
  // The uncork waits for the loop's check phase rather than the next tick: the PUBACK of a
  // message and the relay's answer to it (a report-ack, taken in at setImmediate by the
  // relay's link) then leave in one write. On loopback and on a server alike, the system
  // call and its segment cost more than anything else a heartbeat takes.
  // One immediate a turn for the socket, however many packets the turn wrote.
  let held = 0;
  const release = () => {
    for (; held > 0; held--) socket.uncork();
  };
  conn.cork = () => socket.cork();
  conn.uncork = () => {
    if (held++ === 0) setImmediate(release);
  };
  // What waits for the check phase leaves before the connection closes (a refused
  // sign-in's CONNACK is written, then the connection destroyed, in between).
  const destroy = conn.destroy.bind(conn);
  conn.destroy = (error?: Error) => {
    held = 0;
    while (socket.writableCorked > 0) socket.uncork();
    return destroy(error);
  };
  return conn;
}

/**
 * Messages per terminal in a token bucket: up to `perMinute` at once, then `perMinute`
 * a minute. Terminals seen are kept up to a bound; one dropped starts full again.
 */
export class MessageRate {
  private readonly buckets = new BoundedMap<string, { tokens: number; at: number }>(100_000);

  constructor(
    private readonly perMinute: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Takes one message's token; false when the terminal has none left. */
  take(terminalId: string): boolean {
    const now = this.now();
    const bucket = this.buckets.get(terminalId) ?? { tokens: this.perMinute, at: now };
    bucket.tokens = Math.min(
      this.perMinute,
      bucket.tokens + ((now - bucket.at) * this.perMinute) / 60_000,
    );
    bucket.at = now;
    this.buckets.set(terminalId, bucket);
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }
}
