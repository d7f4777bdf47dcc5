/** How the bridge reaches devices: serial ports, raw TCP and pseudo-terminals. */
export type { OpenPort } from './port.js';
export { openPort, type OpenPortOptions } from './open-port.js';
export { DEFAULT_BAUD_RATE, openSerialPort, type SerialPortOptions } from './serial-port.js';
export { connectTcp, parseTcpAddress, type TcpAddress, type TcpOptions } from './tcp.js';
export { openPty, ptySupport, type PtyBackend, type PtyOptions, type PtyPair } from './pty.js';
