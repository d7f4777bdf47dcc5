/**
 * The emulated printer behind a TCP listener, as a network printer on its raw port (9100):
 * every connection talks to the same printer (one roll of paper, one cover).
 */
import net from 'node:net';
import { EmulatedPrinter, type EmulatedPrinterOptions } from './emulated-printer.js';

export interface EmulatedNetworkPrinterOptions extends EmulatedPrinterOptions {
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: any free port (read it back from `port`). */
  port?: number;
}

export interface EmulatedNetworkPrinter {
  printer: EmulatedPrinter;
  host: string;
  port: number;
  /** `tcp://host:port`, as `tps bridge print` takes it. */
  url: string;
  /** Closes the listener and every connection. */
  close(): Promise<void>;
}

export async function startEmulatedNetworkPrinter(
  options: EmulatedNetworkPrinterOptions = {},
): Promise<EmulatedNetworkPrinter> {
  const printer = new EmulatedPrinter(options);
  const sockets = new Set<net.Socket>();
  const server = net.createServer({ noDelay: true }, (socket) => {
    sockets.add(socket);
    socket.on('error', () => socket.destroy());
    socket.once('close', () => sockets.delete(socket));
    printer.attach(socket);
  });
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as net.AddressInfo;
  return {
    printer,
    host,
    port,
    url: `tcp://${host.includes(':') ? `[${host}]` : host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
