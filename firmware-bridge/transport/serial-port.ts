/**
 * A serial port by path (`/dev/ttyUSB0`, `/dev/pts/4`, `COM3`) through node-serialport.
 * The port is opened raw, 8N1 (8N2 with `stopBits: 2`), without flow control, and locked
 * against other processes.
 */
import type { SerialPort } from 'serialport';
import type { OpenPort } from './port.js';

export interface SerialPortOptions {
  /** Line speed (default 115200, the card reader's). Must match the device's. */
  baudRate?: number;
  /** Stop bits (default 1; ZVT terminals use 2). */
  stopBits?: 1 | 2;
}

export const DEFAULT_BAUD_RATE = 115_200;

/**
 * From Node.js 26.4, serialport's native poller (bindings-cpp 13) calls back into
 * JavaScript without draining the promise jobs it schedules: a read that waited for the
 * line to become readable resumes only when something else wakes the event loop, so bytes
 * sit unread while the process is otherwise idle (serialport/node-serialport#3148; the
 * fix, bindings-cpp#239, is not released). Until it is, a timer that does nothing wakes
 * the loop every few milliseconds while a port is open there. The agent's release runs
 * its own Node.js 24, which needs none.
 */
const POLLER_NEEDS_WAKING = (() => {
  const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
  return major > 26 || (major === 26 && minor >= 4);
})();
const WAKE_EVERY_MS = 5;

/** Keeps reads of `port` flowing where the poller needs it (above); stops with the port. */
function keepReadsFlowing(port: SerialPort): void {
  if (!POLLER_NEEDS_WAKING) return;
  const wake = setInterval(() => {}, WAKE_EVERY_MS);
  port.once('close', () => clearInterval(wake));
}

export async function openSerialPort(
  path: string,
  options: SerialPortOptions = {},
): Promise<OpenPort> {
  // Loaded with the first port: its native binding and the child_process it loads are of
  // no use to an agent whose reader is on TCP (ZVT) or emulated.
  const { SerialPort } = await import('serialport');
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
      keepReadsFlowing(port);
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
