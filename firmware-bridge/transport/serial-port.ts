/**
 * A serial port by path (`/dev/ttyUSB0`, `/dev/pts/4`, `COM3`) through node-serialport.
 * The port is opened raw, 8N1 (8N2 with `stopBits: 2`), without flow control, and locked
 * against other processes.
 */
import { SerialPort } from 'serialport';
import type { OpenPort } from './port.js';

export interface SerialPortOptions {
  /** Line speed (default 115200, the card reader's). Must match the device's. */
  baudRate?: number;
  /** Stop bits (default 1; ZVT terminals use 2). */
  stopBits?: 1 | 2;
}

export const DEFAULT_BAUD_RATE = 115_200;

export function openSerialPort(path: string, options: SerialPortOptions = {}): Promise<OpenPort> {
  const baudRate = options.baudRate ?? DEFAULT_BAUD_RATE;
  const stopBits = options.stopBits ?? 1;
  const port = new SerialPort({ path, baudRate, stopBits, autoOpen: false });
  let closing = false;
  port.on('error', (error: Error & { disconnect?: boolean }) => {
    // Whoever reads the port hears its errors while it listens. A write that races the
    // close fails with EBADF ('disconnect') when no one listens any more: it must not
    // crash the process. Any other error with no one listening still does.
    if (closing || error.disconnect) return;
    if (port.listenerCount('error') === 1) throw error;
  });
  return new Promise((resolve, reject) => {
    port.open((error) => {
      if (error) {
        reject(new Error(`cannot open serial port ${path}: ${error.message}`, { cause: error }));
        return;
      }
      resolve({
        stream: port,
        description: `${path} (${baudRate} baud${stopBits === 2 ? ', 2 stop bits' : ''})`,
        close: () =>
          new Promise<void>((done) => {
            closing = true;
            if (!port.isOpen) return done();
            port.close(() => done());
          }),
      });
    });
  });
}
