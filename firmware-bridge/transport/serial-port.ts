/**
 * A serial port by path (`/dev/ttyUSB0`, `/dev/pts/4`, `COM3`) through node-serialport.
 * The port is opened raw, 8N1, without flow control, and locked against other processes.
 */
import { SerialPort } from 'serialport';
import type { OpenPort } from './port.js';

export interface SerialPortOptions {
  /** Line speed (default 115200, the card reader's). Must match the device's. */
  baudRate?: number;
}

export const DEFAULT_BAUD_RATE = 115_200;

export function openSerialPort(path: string, options: SerialPortOptions = {}): Promise<OpenPort> {
  const baudRate = options.baudRate ?? DEFAULT_BAUD_RATE;
  const port = new SerialPort({ path, baudRate, autoOpen: false });
  return new Promise((resolve, reject) => {
    port.open((error) => {
      if (error) {
        reject(new Error(`cannot open serial port ${path}: ${error.message}`, { cause: error }));
        return;
      }
      resolve({
        stream: port,
        description: `${path} (${baudRate} baud)`,
        close: () =>
          new Promise<void>((done) => {
            if (!port.isOpen) return done();
            port.close(() => done());
          }),
      });
    });
  });
}
