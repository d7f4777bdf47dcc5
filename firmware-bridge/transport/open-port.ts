/** Opens what a bench tool or the agent is given: `tcp://HOST:PORT`, or a serial port path. */
import { openSerialPort, type SerialPortOptions } from './serial-port.js';
import type { OpenPort } from './port.js';
import { connectTcp, parseTcpAddress, type TcpOptions } from './tcp.js';

export type OpenPortOptions = SerialPortOptions & TcpOptions;

export function openPort(spec: string, options: OpenPortOptions = {}): Promise<OpenPort> {
  const tcp = parseTcpAddress(spec);
  if (tcp) return connectTcp(tcp, options);
  if (spec.startsWith('tcp:')) {
    return Promise.reject(new Error(`not a TCP address: ${spec} (expected tcp://HOST:PORT)`));
  }
  return openSerialPort(spec, options);
}
