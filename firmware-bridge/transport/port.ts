/**
 * What every transport opens: a byte stream for a `SerialLink`, and how to let it go.
 * Serial ports, TCP sockets and pseudo-terminals differ only in how they are opened.
 */
import type { Duplex } from 'node:stream';

export interface OpenPort {
  /** The bytes to and from the device. */
  stream: Duplex;
  /** What was opened, for messages: `/dev/ttyUSB0 (115200 baud)`, `tcp://10.0.0.7:4001`. */
  description: string;
  /** Closes the stream; resolves once the system has let go of the device. Safe to repeat. */
  close(): Promise<void>;
}
