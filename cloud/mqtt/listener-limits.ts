/**
 * The bounds of the embedded broker's listener (docs/security.md), besides aedes's own
 * CONNECT time-out: the size of any one packet, checked on the declared length in its
 * fixed header before aedes buffers a byte of it; the rate of an agent's messages; and a
 * warning that says what a limit refused without writing one log line per refusal.
 */
import net from 'node:net';
import { BoundedMap } from '../../common/bounded-map.js';

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

const PACKET_LIMIT = Symbol('packet limit');

/** What limitPacketSize keeps per socket: the scanner, and the uncorks waiting. */
interface PacketLimit {
  scanner: PacketScanner;
  maxBytes: number;
  onTooLarge: (declared: number) => void;
  held: number;
}

type LimitedSocket = net.Socket & { [PACKET_LIMIT]: PacketLimit };

const { read, uncork, destroy } = net.Socket.prototype;

/** The socket's read(), each chunk scanned before the reader (aedes' parser) has it. */
function checkedRead(this: LimitedSocket, size?: number): Buffer | null {
  const chunk = read.call(this, size) as Buffer | null;
  if (chunk === null) return null;
  const limit = this[PACKET_LIMIT];
  const declared = limit.scanner.feed(chunk);
  if (declared === undefined) return chunk;
  limit.onTooLarge(declared);
  this.destroy(new Error(`MQTT packet of ${declared} bytes refused (limit ${limit.maxBytes})`));
  return null;
}

function release(socket: LimitedSocket): void {
  const limit = socket[PACKET_LIMIT];
  for (; limit.held > 0; limit.held--) uncork.call(socket);
}

function heldUncork(this: LimitedSocket): void {
  if (this[PACKET_LIMIT].held++ === 0) setImmediate(release, this);
}

function flushingDestroy(this: LimitedSocket, error?: Error): LimitedSocket {
  this[PACKET_LIMIT].held = 0;
  while (this.writableCorked > 0) uncork.call(this);
  return destroy.call(this, error) as LimitedSocket;
}

/**
 * The socket as aedes reads it, with every packet's declared size checked first: a
 * packet over `maxBytes` ends the connection before its body is buffered (a peer could
 * otherwise declare 256 MB and trickle it in). aedes has no such option.
 *
 * The socket itself, its read() checking each chunk it hands over (aedes reads with
 * read() on 'readable'), rather than a stream piped in front of it: a Transform, its
 * pipeline and a Duplex joining both cost each connection ≈ 12 KB of JS heap (their
 * stream states, eight sets of end-of-stream listeners, an AbortController). What the
 * socket holds unread stays within its high-water mark, as before.
 */
export function limitPacketSize(
  socket: net.Socket,
  maxBytes: number,
  onTooLarge: (declared: number) => void,
): net.Socket {
  const limited = socket as LimitedSocket;
  limited[PACKET_LIMIT] = { scanner: new PacketScanner(maxBytes), maxBytes, onTooLarge, held: 0 };
  limited.read = checkedRead;
  // mqtt-packet corks the stream it writes a packet to and uncorks it on the next tick, so
  // that a packet's pieces (header, topic, payload) and the packets of one tick leave in one
  // write. The uncork waits for the loop's check phase rather than the next tick, so that
  // what one turn writes to the socket across ticks leaves in one write: an agent's connect
  // (CONNACK, SUBACK, its retained messages) takes about a quarter fewer writes in a storm,
  // counted. A report's PUBACK and its report-ack still leave in two, as from bare aedes:
  // the ack follows the relay's store a turn or more later (docs/performance.md, section 10).
  // One immediate a turn for the socket, however many packets the turn wrote.
  limited.uncork = heldUncork;
  // What waits for the check phase leaves before the connection closes (a refused
  // sign-in's CONNACK is written, then the connection destroyed, in between).
  limited.destroy = flushingDestroy;
  return limited;
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
