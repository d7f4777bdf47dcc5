/**
 * Raw TCP to a device: the port-9100 style of network printers, or a serial-to-network
 * bridge (ser2net, a terminal server) in raw mode in front of a card reader.
 */
import net from 'node:net';
import type { OpenPort } from './port.js';

/** How long close() waits for the peer to take what is still unsent before cutting it off. */
const CLOSE_GRACE_MS = 2000;

export interface TcpOptions {
  /** Give up connecting after this many ms (default 5000): a wrong address fails fast. */
  connectTimeoutMs?: number;
}

export interface TcpAddress {
  host: string;
  port: number;
}

/** `tcp://HOST:PORT` (also `tcp://[::1]:PORT`) to its parts; undefined if it is not one. */
export function parseTcpAddress(spec: string): TcpAddress | undefined {
  const match = /^tcp:\/\/(?:\[([^\]]+)\]|([^:/]+)):(\d{1,5})\/?$/.exec(spec);
  if (!match) return undefined;
  const port = Number(match[3]);
  if (port < 1 || port > 65_535) return undefined;
  return { host: (match[1] ?? match[2]) as string, port };
}

export function connectTcp(address: TcpAddress, options: TcpOptions = {}): Promise<OpenPort> {
  const description = `tcp://${address.host.includes(':') ? `[${address.host}]` : address.host}:${address.port}`;
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: address.host, port: address.port });
    socket.setTimeout(options.connectTimeoutMs ?? 5000);
    const fail = (error: Error) => {
      socket.destroy();
      reject(new Error(`cannot connect to ${description}: ${error.message}`, { cause: error }));
    };
    socket.once('timeout', () => fail(new Error('timed out')));
    socket.once('error', fail);
    socket.once('connect', () => {
      socket.off('error', fail);
      socket.setTimeout(0);
      // Frames are small and latency-bound: do not hold them back for Nagle's algorithm.
      socket.setNoDelay(true);
      socket.setKeepAlive(true, 10_000);
      resolve({
        stream: socket,
        description,
        close: () =>
          new Promise<void>((done) => {
            if (socket.destroyed) return done();
            // Send what is written, then let go without waiting for the peer to close; a
            // peer that reads nothing would hold the close (and the socket) forever.
            const cut = setTimeout(() => socket.destroy(), CLOSE_GRACE_MS);
            socket.once('close', () => {
              clearTimeout(cut);
              done();
            });
            socket.end(() => socket.destroy());
          }),
      });
    });
  });
}
