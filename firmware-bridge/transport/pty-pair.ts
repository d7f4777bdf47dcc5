/** What every pseudo-terminal backend makes (pty.ts picks one). */
import type { OpenPort } from './port.js';

export type PtyBackend = 'node-pty' | 'socat';

export interface PtyPair extends OpenPort {
  /** The path a host opens, like a serial port. */
  path: string;
  backend: PtyBackend;
}
