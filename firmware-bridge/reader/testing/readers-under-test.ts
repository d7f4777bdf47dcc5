/**
 * The card readers the driver tests run against, behind one interface: the emulated
 * firmware over a stream pair (clean or noisy), the emulated firmware on a pty opened with
 * node-serialport, or a real reader on a port (`TEST_READER_PORT`, hardware in the loop).
 */
import { randomBytes } from 'node:crypto';
import type { Duplex } from 'node:stream';
import {
  CardReaderFirmware,
  type CardReaderFirmwareOptions,
} from '../../emulator/card-reader-firmware.js';
import type { SerialLinkOptions } from '../../serial/link.js';
import { createStreamPair, type LineFaults } from '../../serial/stream-pair.js';
import { openPort } from '../../transport/open-port.js';
import type { OpenPort } from '../../transport/port.js';
import { openPty, type PtyBackend } from '../../transport/pty.js';
import { openSerialPort } from '../../transport/serial-port.js';
import type { CardReader } from '../card-reader.js';
import { ReaderEventLog } from '../reader-events.js';
import { SerialCardReader } from '../serial-card-reader.js';

export interface ConnectedReader<R extends CardReader = CardReader> {
  reader: R;
  events: ReaderEventLog;
}

export interface ReaderUnderTest<R extends CardReader = CardReader> {
  name: string;
  /** How long a test waits for a reader to finish something normal. */
  timeoutMs: number;
  /** A new host link and driver, as an agent starting up. */
  connect(): Promise<ConnectedReader<R>>;
  /** The host dies: its end of the line goes away without a goodbye. */
  crash(connected: ConnectedReader<R>): Promise<void>;
  close(): Promise<void>;
  /** The emulated firmware, when the reader is one. */
  firmware?: CardReaderFirmware;
}

type LinkOptions = Omit<SerialLinkOptions<'host'>, 'role'>;

export interface EmulatedOptions {
  firmware?: CardReaderFirmwareOptions;
  /** Line faults in both directions of the stream pair. */
  faults?: LineFaults;
  seed?: number;
  /** Link options for both ends (e.g. short ack timeouts on a noisy line). */
  link?: LinkOptions;
}

/** A transaction id no reader has seen before, for tests that may run on real hardware. */
export function newTransactionId(label: string): string {
  return `tx-${label}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
}

/** Closes a stream the way a dying process does, and waits until it is gone. */
async function pull(stream: Duplex): Promise<void> {
  if (stream.destroyed) return;
  await new Promise<void>((resolve) => {
    stream.once('close', () => resolve());
    stream.destroy();
  });
}

export function emulatedReader(options: EmulatedOptions = {}): ReaderUnderTest<SerialCardReader> {
  const firmware = new CardReaderFirmware({
    delayMs: 40,
    ...options.firmware,
    link: { ...options.link, ...options.firmware?.link },
  });
  const lines = new Map<SerialCardReader, Duplex>();
  return {
    name: options.faults
      ? 'emulated firmware, noisy stream pair'
      : 'emulated firmware, stream pair',
    timeoutMs: 10_000,
    firmware,
    async connect() {
      const pair = createStreamPair({
        seed: options.seed,
        aToB: options.faults,
        bToA: options.faults,
      });
      firmware.serve(pair.b);
      const reader = SerialCardReader.connect(pair.a, { link: options.link });
      lines.set(reader, pair.a);
      return { reader, events: new ReaderEventLog(reader) };
    },
    async crash({ reader }) {
      await pull(lines.get(reader) as Duplex);
    },
    async close() {
      for (const [reader, line] of lines) {
        await reader.close();
        line.destroy();
      }
      await firmware.close();
    },
  };
}

/** Hosts that open a port by path or address, each connect() a fresh open. */
function portReader(
  name: string,
  timeoutMs: number,
  open: () => Promise<OpenPort>,
  extra: { firmware?: CardReaderFirmware; close?: () => Promise<void>; link?: LinkOptions } = {},
): ReaderUnderTest<SerialCardReader> {
  const ports = new Map<SerialCardReader, OpenPort>();
  return {
    name,
    timeoutMs,
    firmware: extra.firmware,
    async connect() {
      const port = await open();
      const reader = SerialCardReader.connect(port.stream, { link: extra.link });
      ports.set(reader, port);
      return { reader, events: new ReaderEventLog(reader) };
    },
    async crash({ reader }) {
      // The system closes a dead process's port: no goodbye on the link.
      await (ports.get(reader) as OpenPort).close();
    },
    async close() {
      for (const [reader, port] of ports) {
        await reader.close();
        await port.close();
      }
      await extra.close?.();
    },
  };
}

/** The emulated firmware on a pty; the host opens the pty's path with node-serialport. */
export async function emulatedReaderOnPty(
  options: { backend?: PtyBackend; firmware?: CardReaderFirmwareOptions } = {},
): Promise<ReaderUnderTest> {
  const pty = await openPty({ backend: options.backend });
  const firmware = new CardReaderFirmware({ delayMs: 40, ...options.firmware });
  firmware.serve(pty.stream);
  return portReader(
    `emulated firmware on ${pty.description}`,
    10_000,
    () => openSerialPort(pty.path),
    {
      firmware,
      close: async () => {
        await firmware.close();
        await pty.close();
      },
    },
  );
}

/** A real reader (or anything else) at `spec`: a serial port path or tcp://HOST:PORT. */
export function realReader(spec: string): ReaderUnderTest {
  return portReader(`reader at ${spec}`, 60_000, () => openPort(spec));
}
