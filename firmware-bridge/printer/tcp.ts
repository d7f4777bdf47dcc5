/**
 * Raw TCP to a network printer: the "port 9100" (JetDirect/AppSocket) style, where the
 * socket carries the same ESC/POS bytes as a serial line, and status answers come back on it.
 */
import net from 'node:net';
import { systemTimers, type Timers } from '../../common/clock.js';
import { PrinterError } from './errors.js';

export const RAW_PRINT_PORT = 9100;

export interface TcpPrinterOptions {
  host: string;
  /** Default 9100. */
  port?: number;
  /**
   * Give up connecting after this many ms (default 5000). An unplugged or sleeping printer
   * drops SYNs silently, and the system's own connect timeout runs for minutes.
   */
  connectTimeoutMs?: number;
  timers?: Timers;
}

/**
 * Opens a socket to the printer, with Nagle off (status queries are 3-byte writes that
 * otherwise wait for the previous write's ACK) and keep-alive on (a printer switched off
 * mid-session is noticed). Rejects with PrinterError TIMEOUT or DISCONNECTED.
 */
export function connectTcpPrinter(options: TcpPrinterOptions): Promise<net.Socket> {
  const timers = options.timers ?? systemTimers;
  const port = options.port ?? RAW_PRINT_PORT;
  const where = `${options.host}:${port}`;
  const timeoutMs = options.connectTimeoutMs ?? 5000;
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: options.host, port, noDelay: true, keepAlive: true });
    const timer = timers.setTimeout(() => {
      socket.destroy();
      reject(
        new PrinterError('TIMEOUT', `no connection to printer ${where} within ${timeoutMs} ms`, {
          disconnected: true,
        }),
      );
    }, timeoutMs);
    const onError = (error: Error) => {
      timers.clearTimeout(timer);
      reject(
        new PrinterError('DISCONNECTED', `cannot connect to printer ${where}: ${error.message}`, {
          cause: error,
        }),
      );
    };
    socket.once('error', onError);
    socket.once('connect', () => {
      timers.clearTimeout(timer);
      socket.off('error', onError);
      resolve(socket);
    });
  });
}

/** Parses `tcp://host:port` (port default 9100; IPv6 hosts in brackets); undefined otherwise. */
export function parseTcpAddress(address: string): { host: string; port: number } | undefined {
  const match = /^(?:tcp:\/\/)?(\[[^\]]+\]|[^:/[\]]+)(?::(\d{1,5}))?\/?$/.exec(address);
  if (!match) return undefined;
  const host = match[1]!.replace(/^\[|\]$/g, '');
  const port = match[2] === undefined ? RAW_PRINT_PORT : Number(match[2]);
  if (port < 1 || port > 65535) return undefined;
  return { host, port };
}
