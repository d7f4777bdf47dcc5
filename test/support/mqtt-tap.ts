/**
 * A TCP relay between an agent and its broker that reads the MQTT packets passing in each
 * direction, so that a test can do to one kind of message what a network or a broker may:
 * hold the publishes to some topics in one direction while everything else passes (the
 * agent's reports arrive late, its acknowledgements of commands do not; or the relay's
 * commands arrive late, the agent's reports do not), and hand the agent again a
 * message the broker delivered before (a QoS 1 message delivered again, out of order).
 * Packets pass whole and unchanged, in their order, unless held.
 */
import net from 'node:net';

export type Direction = 'toBroker' | 'toAgent';

/** One MQTT control packet, its bytes as they came. */
interface Packet {
  bytes: Buffer;
  /** The topic of a PUBLISH. */
  topic?: string;
}

/** Splits a byte stream into MQTT packets (fixed header, remaining length, body). */
class PacketSplitter {
  private buffer = Buffer.alloc(0);

  push(chunk: Buffer): Packet[] {
    this.buffer = Buffer.concat([this.buffer, chunk]);
    const packets: Packet[] = [];
    for (;;) {
      let length = 0;
      let multiplier = 1;
      let offset = 1;
      let complete = false;
      while (offset < this.buffer.length && offset <= 4) {
        const byte = this.buffer[offset++]!;
        length += (byte & 0x7f) * multiplier;
        multiplier *= 128;
        if ((byte & 0x80) === 0) {
          complete = true;
          break;
        }
      }
      if (!complete || this.buffer.length < offset + length) return packets;
      const bytes = this.buffer.subarray(0, offset + length);
      this.buffer = this.buffer.subarray(offset + length);
      const type = bytes[0]! >> 4;
      const topic =
        type === 3
          ? bytes.subarray(offset + 2, offset + 2 + bytes.readUInt16BE(offset)).toString('utf8')
          : undefined;
      packets.push({ bytes: Buffer.from(bytes), ...(topic !== undefined ? { topic } : {}) });
    }
  }
}

/** A QoS 0 PUBLISH of `payload` on `topic` (MQTT 3.1.1). */
function publishPacket(topic: string, payload: Buffer): Buffer {
  const name = Buffer.from(topic, 'utf8');
  const body = Buffer.concat([Buffer.from([name.length >> 8, name.length & 0xff]), name, payload]);
  const length: number[] = [];
  let rest = body.length;
  do {
    let byte = rest % 128;
    rest = Math.floor(rest / 128);
    if (rest > 0) byte |= 0x80;
    length.push(byte);
  } while (rest > 0);
  return Buffer.concat([Buffer.from([0x30, ...length]), body]);
}

/** The payload of a PUBLISH packet (QoS from its flags: a packet id follows the topic above 0). */
function payloadOf(bytes: Buffer): Buffer {
  let offset = 1;
  while (bytes[offset++]! & 0x80);
  const topicEnd = offset + 2 + bytes.readUInt16BE(offset);
  const qos = (bytes[0]! >> 1) & 3;
  return bytes.subarray(qos > 0 ? topicEnd + 2 : topicEnd);
}

interface Connection {
  agent: net.Socket;
  broker: net.Socket;
  held: Array<{ direction: Direction; bytes: Buffer }>;
}

export class MqttTap {
  private readonly server: net.Server;
  private readonly connections = new Set<Connection>();
  private holding: { matches: (topic: string) => boolean; direction: Direction } | undefined;
  /** Payloads of the PUBLISH packets the broker sent towards the agent, by topic, in order. */
  private readonly delivered = new Map<string, Buffer[]>();

  constructor(private readonly target: { host: string; port: number }) {
    this.server = net.createServer({ noDelay: true }, (agent) => {
      const broker = net.connect({ ...this.target, noDelay: true });
      const connection: Connection = { agent, broker, held: [] };
      this.connections.add(connection);
      for (const socket of [agent, broker]) {
        socket.on('error', () => {});
        socket.on('close', () => {
          this.connections.delete(connection);
          agent.destroy();
          broker.destroy();
        });
      }
      this.pipe(connection, 'toBroker');
      this.pipe(connection, 'toAgent');
    });
  }

  /** Listens on a free port; answers the broker URL to give the agent (or a switch before it). */
  async listen(): Promise<{ host: string; port: number; url: string }> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const { port } = this.server.address() as net.AddressInfo;
    return { host: '127.0.0.1', port, url: `mqtt://127.0.0.1:${port}` };
  }

  /**
   * Holds the publishes whose topic `matches` until `release`: the agent's (`toBroker`,
   * the default) or the broker's to the agent (`toAgent`); everything else passes.
   */
  hold(matches: (topic: string) => boolean, direction: Direction = 'toBroker'): void {
    this.holding = { matches, direction };
  }

  /** Sends what was held, in its order, and holds nothing more. Answers how many packets. */
  release(): number {
    this.holding = undefined;
    let sent = 0;
    for (const connection of this.connections) {
      for (const { direction, bytes } of connection.held.splice(0)) {
        (direction === 'toBroker' ? connection.broker : connection.agent).write(bytes);
        sent++;
      }
    }
    return sent;
  }

  /** How many of the agent's packets wait, held. */
  get heldCount(): number {
    let count = 0;
    for (const connection of this.connections) count += connection.held.length;
    return count;
  }

  /** The payloads the broker sent towards the agent on `topic`, oldest first. */
  deliveredOn(topic: string): Buffer[] {
    return [...(this.delivered.get(topic) ?? [])];
  }

  /** Hands the connected agent a message on `topic` as the broker would (QoS 0). */
  deliver(topic: string, payload: Buffer): void {
    for (const connection of this.connections) {
      connection.agent.write(publishPacket(topic, payload));
    }
  }

  close(): Promise<void> {
    for (const { agent, broker } of this.connections) {
      agent.destroy();
      broker.destroy();
    }
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private pipe(connection: Connection, direction: Direction): void {
    const [from, to] =
      direction === 'toBroker'
        ? [connection.agent, connection.broker]
        : [connection.broker, connection.agent];
    const splitter = new PacketSplitter();
    from.on('data', (chunk: Buffer) => {
      for (const packet of splitter.push(chunk)) {
        if (direction === 'toAgent' && packet.topic !== undefined) {
          const seen = this.delivered.get(packet.topic) ?? [];
          this.delivered.set(packet.topic, [...seen, Buffer.from(payloadOf(packet.bytes))]);
        }
        if (
          packet.topic !== undefined &&
          this.holding?.direction === direction &&
          this.holding.matches(packet.topic)
        ) {
          connection.held.push({ direction, bytes: packet.bytes });
        } else {
          to.write(packet.bytes);
        }
      }
    });
  }
}
