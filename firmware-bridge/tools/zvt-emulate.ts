/**
 * The emulated ZVT payment terminal as a bench device: on a new pty with ZVT serial framing
 * (its path is what the cash register opens), on an existing serial port, or listening on
 * TCP as real terminals do (port 20007 by default). Its journal is a JSON Lines file when
 * `state` is given, so that it outlives crashes of the ECR and restarts of the emulator.
 *
 * On a pty the terminal keeps serving when the ECR closes and reopens the device: the
 * emulator keeps the pty's other end, so its link never sees the line go away.
 */
import { UsageError } from '../../common/cli.js';
import { FileTerminalMemory, InMemoryTerminalMemory } from '../emulator/zvt/terminal-memory.js';
import { listenTcp, serveSerial, type ZvtTcpListener } from '../emulator/zvt/terminal-server.js';
import { ZvtTerminalEmulator } from '../emulator/zvt/zvt-terminal.js';
import { openPort } from '../transport/open-port.js';
import type { OpenPort } from '../transport/port.js';
import { openPty } from '../transport/pty.js';
import { ZVT_TCP_PORT } from '../zvt/tcp-channel.js';

/** The line speed of ZVT serial lines unless told otherwise (zvt-notes §2.1). */
export const ZVT_BAUD_RATE = 9600;

export interface ZvtEmulatorOptions {
  /** The terminal's journal file (default: in memory only). */
  state?: string;
  /** What a normal transaction takes, in ms (default 3000). */
  delayMs?: number;
  /** The password of registration and the admin commands, 6 digits (default 000000). */
  password?: string;
  /** Listen on TCP here instead of serving a serial line. */
  tcp?: { host: string; port: number };
  /** Serve this serial port (8N2) instead of a new pty. */
  port?: string;
  /** The line speed of `port`, and of the link's timeouts (default 9600). */
  baudRate?: number;
  /** Gives the references of the scenarios (default 1). */
  serial?: number;
  /** BMP 29, 8 digits (default 29001001). */
  terminalId?: string;
}

export interface RunningZvtEmulator {
  /** The path an ECR opens (the pty's, or the port served), or `tcp://HOST:PORT`. */
  address: string;
  description: string;
  terminal: ZvtTerminalEmulator;
  close(): Promise<void>;
}

export async function startZvtEmulator(
  options: ZvtEmulatorOptions = {},
): Promise<RunningZvtEmulator> {
  if (options.password !== undefined && !/^[0-9]{6}$/.test(options.password)) {
    throw new Error(`a ZVT password is 6 digits, not '${options.password}'`);
  }
  if (options.terminalId !== undefined && !/^[0-9]{8}$/.test(options.terminalId)) {
    throw new Error(`a ZVT terminal id is 8 digits, not '${options.terminalId}'`);
  }
  const memory = options.state
    ? new FileTerminalMemory(options.state)
    : new InMemoryTerminalMemory();
  const terminal = new ZvtTerminalEmulator({
    memory,
    ...(options.password === undefined ? {} : { password: options.password }),
    ...(options.delayMs === undefined ? {} : { delayMs: options.delayMs }),
    ...(options.serial === undefined ? {} : { serial: options.serial }),
    ...(options.terminalId === undefined ? {} : { terminalId: options.terminalId }),
  });
  try {
    if (options.tcp) {
      const listener: ZvtTcpListener = await listenTcp(terminal, {
        host: options.tcp.host,
        port: options.tcp.port,
      });
      const address = `tcp://${listener.host.includes(':') ? `[${listener.host}]` : listener.host}:${listener.port}`;
      return {
        address,
        description: `TCP ${address}`,
        terminal,
        close: async () => {
          await listener.close();
          await terminal.close();
        },
      };
    }
    const baudRate = options.baudRate ?? ZVT_BAUD_RATE;
    const line: OpenPort & { path?: string } = options.port
      ? await openPort(options.port, { baudRate, stopBits: 2 })
      : await openPty();
    serveSerial(terminal, line.stream, { baudRate });
    return {
      address: line.path ?? (options.port as string),
      description: line.description,
      terminal,
      close: async () => {
        await terminal.close();
        await line.close();
      },
    };
  } catch (error) {
    await terminal.close();
    throw error;
  }
}

/** `HOST:PORT` (`[::1]:PORT`; `:PORT` is 127.0.0.1; port 0: the system picks one) to its parts. */
export function parseListenAddress(text: string): { host: string; port: number } {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(text);
  const port = match ? Number(match[3]) : NaN;
  if (!match || port > 65_535) {
    throw new UsageError(`--tcp takes HOST:PORT (e.g. 127.0.0.1:${ZVT_TCP_PORT}), not '${text}'`);
  }
  return { host: match[1] ?? (match[2] || '127.0.0.1'), port };
}
