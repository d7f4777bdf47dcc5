/**
 * The emulated card reader as a bench device: on a new pty (its path is what the host
 * opens), or on an existing port (a USB-serial adapter cabled to the host under test, or a
 * pty made elsewhere). Its memory is a JSON Lines file when `state` is given, so that it
 * outlives crashes of the host and restarts of the emulator.
 */
import { CardReaderFirmware } from '../emulator/card-reader-firmware.js';
import { FileReaderMemory } from '../emulator/file-reader-memory.js';
import { InMemoryReaderMemory } from '../emulator/reader-memory.js';
import type { BatteryOptions } from '../emulator/reader-status.js';
import { openPort } from '../transport/open-port.js';
import type { OpenPort } from '../transport/port.js';
import { openPty } from '../transport/pty.js';

export interface EmulatorOptions {
  /** The reader's memory file (default: in memory only). */
  state?: string;
  /** What a normal transaction takes, in ms (default 3000). */
  delayMs?: number;
  /** Serve this port (path or tcp://HOST:PORT) instead of a new pty. */
  port?: string;
  baudRate?: number;
  battery?: BatteryOptions | false;
  serial?: number;
}

export interface RunningEmulator {
  /** The path a host opens (the pty's), or the port served. */
  path: string;
  description: string;
  firmware: CardReaderFirmware;
  close(): Promise<void>;
}

export async function startEmulator(options: EmulatorOptions = {}): Promise<RunningEmulator> {
  const memory = options.state ? new FileReaderMemory(options.state) : new InMemoryReaderMemory();
  let line: OpenPort & { path?: string };
  try {
    line = options.port
      ? await openPort(options.port, { baudRate: options.baudRate })
      : await openPty();
  } catch (error) {
    memory.close();
    throw error;
  }
  const firmware = new CardReaderFirmware({
    memory,
    delayMs: options.delayMs,
    battery: options.battery,
    serial: options.serial,
    link: { baudRate: options.baudRate },
  });
  firmware.serve(line.stream);
  return {
    path: line.path ?? (options.port as string),
    description: line.description,
    firmware,
    close: async () => {
      await firmware.close();
      await line.close();
    },
  };
}
