/**
 * Opens the line to a ZVT terminal as an ApduChannel: a serial port with the ZVT serial
 * framing (DLE STX … DLE ETX CRC, link ACK/NAK), or TCP (plain APDUs, default port 20007).
 * close() lets go of the channel and the port or socket.
 */
import { SerialPort } from 'serialport';
import type { ApduChannel } from '../channel.js';
import { ZvtSerialLink, type ZvtSerialLinkOptions } from '../serial-link.js';
import { connectZvtTcp, ZVT_TCP_PORT } from '../tcp-channel.js';

/** The line speed ZVT terminals default to (zvt-notes §2.1); 115200 is also common. */
export const ZVT_DEFAULT_BAUD_RATE = 9600;

export type ZvtTarget = { port: string; baudRate?: number } | { tcp: string /* HOST:PORT */ };

export type ClosableApduChannel = ApduChannel & {
  close(): Promise<void>;
  /** What was opened, for messages: `/dev/ttyUSB0 (9600 baud, 8N2)`, `tcp://10.0.0.7:20007`. */
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
  const port = new SerialPort({ path: target.port, baudRate, stopBits: 2, autoOpen: false });
  let closing = false;
  port.on('error', (error: Error & { disconnect?: boolean }) => {
    // The link hears the port's errors through the stream; a write racing the close fails
    // with EBADF and must not crash the process.
    if (closing || error.disconnect) return;
  });
  await new Promise<void>((resolve, reject) =>
    port.open((error) =>
      error
        ? reject(
            new Error(`cannot open serial port ${target.port}: ${error.message}`, { cause: error }),
          )
        : resolve(),
    ),
  );
  const link = new ZvtSerialLink(port, { ...options.link, baudRate });
  return withClose(link, `${target.port} (${baudRate} baud, 8N2)`, async () => {
    closing = true;
    if (port.isOpen) await new Promise<void>((done) => port.close(() => done()));
  });
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
