/**
 * The emulated ZVT terminal on its transports: a serial line (a pty, a serial port, a
 * stream-pair end) with the ZVT serial link, and a TCP listener where each ECR connection
 * gets its own channel. The terminal itself (zvt-terminal.ts) does not know which.
 *
 * On a serial line the link stays up while the ECR closes and reopens its end of a pty (the
 * pty layer keeps the master alive): a half frame left by the closing ECR is dropped by the
 * link's frame timeout, a command cut off times out, and the reopened ECR is served.
 */
import net from 'node:net';
import type { Duplex } from 'node:stream';
import type { ZvtPtSession } from '../../zvt/pt-session.js';
import { ZvtSerialLink, type ZvtSerialLinkOptions } from '../../zvt/serial-link.js';
import { ZVT_TCP_PORT, ZvtTcpChannel, type ZvtTcpChannelOptions } from '../../zvt/tcp-channel.js';
import type { ZvtTerminalEmulator } from './zvt-terminal.js';

/** Serves the ECR on a serial line from now on; closing the session lets go of the line. */
export function serveSerial(
  terminal: ZvtTerminalEmulator,
  port: Duplex,
  options: ZvtSerialLinkOptions = {},
): ZvtPtSession {
  return terminal.serve(new ZvtSerialLink(port, options));
}

export interface ZvtTcpListener {
  /** The port listened on (the one chosen by the system when 0 was asked for). */
  port: number;
  host: string;
  /** Stops listening and drops every connection. */
  close(): Promise<void>;
}

/** Listens for ECR connections (default 127.0.0.1:20007); each is served by the terminal. */
export async function listenTcp(
  terminal: ZvtTerminalEmulator,
  options: { host?: string; port?: number } & ZvtTcpChannelOptions = {},
): Promise<ZvtTcpListener> {
  const host = options.host ?? '127.0.0.1';
  const sockets = new Set<net.Socket>();
  // Nagle off: every APDU waits for an answer, so none may wait for the next.
  const server = net.createServer({ noDelay: true }, (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    terminal.serve(new ZvtTcpChannel(socket, options));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? ZVT_TCP_PORT, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    host,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
