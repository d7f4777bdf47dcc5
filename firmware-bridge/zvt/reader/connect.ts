/**
 * Opens the line to a ZVT terminal as an ApduChannel: a serial port with the ZVT serial
 * framing (DLE STX … DLE ETX CRC, link ACK/NAK), or TCP (plain APDUs, default port 20007).
 * close() lets go of the channel and the port or socket.
 */
import { openSerialPort } from '../../transport/serial-port.js';
import type { ApduChannel } from '../channel.js';
import { ZvtSerialLink, type ZvtSerialLinkOptions } from '../serial-link.js';
import { connectZvtTcp, ZVT_TCP_PORT } from '../tcp-channel.js';

/** The line speed ZVT terminals default to (zvt-notes §2.1); 115200 is also common. */
export const ZVT_DEFAULT_BAUD_RATE = 9600;

export type ZvtTarget = { port: string; baudRate?: number } | { tcp: string /* HOST:PORT */ };

export type ClosableApduChannel = ApduChannel & {
  close(): Promise<void>;
  /** What was opened, for messages: `/dev/ttyUSB0 (9600 baud, 2 stop bits)`, `tcp://10.0.0.7:20007`. */
  readonly description: string;
};

/** `HOST:PORT`, `[v6]:PORT` or `HOST` (port 20007); undefined when it is not one. */
export function parseZvtTcpTarget(spec: string): { host: string; port: number } | undefined {
  const match = /^(?:tcp:\/\/)?(?:\[([^\]]+)\]|([^:/[\]]+))(?::(\d{1,5}))?\/?$/.exec(spec.trim());
  if (!match) return undefined;
  const port = match[3] === undefined ? ZVT_TCP_PORT : Number(match[3]);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) return undefined;
  return { host: (match[1] ?? match[2]) as string, port };
}

export async function openZvtChannel(
  target: ZvtTarget,
  options: { link?: Omit<ZvtSerialLinkOptions, 'baudRate'>; connectTimeoutMs?: number } = {},
): Promise<ClosableApduChannel> {
  if ('tcp' in target) {
    const address = parseZvtTcpTarget(target.tcp);
    if (!address) throw new Error(`not a HOST:PORT address: ${JSON.stringify(target.tcp)}`);
    const connection = await connectZvtTcp(address, { connectTimeoutMs: options.connectTimeoutMs });
    return withClose(connection.channel, connection.port.description, () =>
      connection.port.close(),
    );
  }
  const baudRate = target.baudRate ?? ZVT_DEFAULT_BAUD_RATE;
  // 8N2 without flow control, as ET and PZ open the line (zvt-notes §2.1).
  const port = await openSerialPort(target.port, { baudRate, stopBits: 2 });
  const link = new ZvtSerialLink(port.stream, { ...options.link, baudRate });
  return withClose(link, port.description, () => port.close());
}

/** The channel, whose close() also lets go of what carries it (`release`). */
function withClose(
  channel: ApduChannel,
  description: string,
  release: () => Promise<void>,
): ClosableApduChannel {
  const closeChannel = channel.close.bind(channel);
  const close = async () => {
    await closeChannel();
    await release();
  };
  return Object.assign(channel, { description, close }) as ClosableApduChannel;
}
