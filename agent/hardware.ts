/**
 * The card reader and printer a config names, opened through firmware-bridge: the native
 * reader on a serial device, a ZVT terminal on a serial device or over TCP, or the emulated
 * reader of either protocol in process on an in-memory line with its memory in
 * `reader.emulated.state_file`, so that it too survives a crash of the agent.
 */
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { LineTrace } from './fleet-trace.js';
import type { ZvtSettlement } from '../firmware-bridge/zvt/reader/settlement.js';
import { FileReaderMemory } from '../firmware-bridge/emulator/file-reader-memory.js';
import { connectTcpPrinter } from '../firmware-bridge/printer/tcp.js';
import { SerialCardReader } from '../firmware-bridge/reader/serial-card-reader.js';
import { openSerialPort } from '../firmware-bridge/transport/serial-port.js';
import {
  NATIVE_READER_CAPABILITIES,
  type ReaderCapabilities,
} from '../protocol/reader-capabilities.js';
import type { AgentConfig, PrinterConfig } from './config.js';
import { emulatedReader } from './emulated-reader.js';
import type { PrinterPort } from './ports.js';
import { DriverPrinter } from './printer-adapter.js';
import { DriverReader, type OpenReaderConnection } from './reader-adapter.js';
import { partLogger } from '../common/logging.js';
import {
  emulatedZvtReader,
  zvtConnection,
  zvtEndOfDay,
  zvtReaderCapabilities,
  zvtStateFile,
} from './zvt-reader.js';

export interface Hardware {
  reader: DriverReader;
  /** What the reader can do: the agent tells the relay with its presence. */
  capabilities: ReaderCapabilities;
  printer?: PrinterPort;
  /** The reader's model and firmware as far as the agent can tell, for the fleet's facts. */
  facts(): ReaderFacts;
  /** Called when the reader told something new about itself (a ZVT software version). */
  onFactsChanged(listener: () => void): void;
  /** The terminal's end-of-day (ZVT 06 50); absent for the native reader, which has none. */
  endOfDay?: () => Promise<ZvtSettlement>;
  /** Called when the terminal says it needs an end-of-day (ZVT status F0). */
  onEndOfDayRequired(listener: () => void): void;
  close(): Promise<void>;
}

export interface ReaderFacts {
  model: string;
  firmware?: string;
}

/** What the fleet's facts take of a text the reader sent: printable, at most 64 characters. */
const factText = (text: string): string =>
  text
    .replace(/[^\x20-\x7e]/g, ' ')
    .trim()
    .slice(0, 64);

export interface HardwareOptions {
  /** Follows the reader's line (native frames, ZVT APDUs), for remote diagnostics (fleet-trace.ts). */
  trace?: LineTrace;
}

export function openHardware(
  config: Pick<AgentConfig, 'reader' | 'printer' | 'data_dir'>,
  logger: Logger,
  options: HardwareOptions = {},
): Hardware {
  const { reader, printer } = config;
  const readerLogger = partLogger(logger, 'reader');
  if (reader.protocol === 'zvt') {
    return withPrinter(zvtHardware(config, readerLogger, options.trace), printer);
  }
  const tap = options.trace ? (stream: Duplex) => options.trace!.tap(stream) : undefined;
  const emulated = reader.emulated
    ? emulatedReader({
        memory: new FileReaderMemory(reader.emulated.state_file),
        delayMs: reader.emulated.delay_ms,
        logger: readerLogger,
        ...(tap ? { tap } : {}),
      })
    : undefined;
  const driverReader =
    emulated?.reader ??
    new DriverReader(serialReader(reader.port ?? '', reader.baud_rate, tap), readerLogger);
  return withPrinter(
    {
      reader: driverReader,
      capabilities: NATIVE_READER_CAPABILITIES,
      facts: () => ({
        model: emulated ? 'emulated native reader' : `native reader on ${reader.port ?? '?'}`,
      }),
      onFactsChanged: () => undefined,
      onEndOfDayRequired: () => undefined,
      close: () => (emulated ? emulated.close() : driverReader.close()),
    },
    printer,
  );
}

function zvtHardware(
  config: Pick<AgentConfig, 'reader' | 'data_dir'>,
  logger: Logger,
  trace: LineTrace | undefined,
): Omit<Hardware, 'printer'> {
  const { reader } = config;
  // The terminal says its software version in answer to a status enquiry (heartbeat, doctor).
  let firmware: string | undefined;
  const listeners: (() => void)[] = [];
  const required: (() => void)[] = [];
  const known = {
    onFactsChanged: (listener: () => void) => void listeners.push(listener),
    onEndOfDayRequired: (listener: () => void) => void required.push(listener),
  };
  const facts = (model: string) => () => ({
    model,
    ...(firmware !== undefined ? { firmware } : {}),
  });
  const settings = {
    stateFile: zvtStateFile(config.data_dir),
    ...(trace ? { trace } : {}),
    onSoftwareVersion: (version: string) => {
      const text = factText(version);
      if (text === '' || text === firmware) return;
      firmware = text;
      for (const listener of listeners) listener();
    },
    onEndOfDayRequired: () => {
      for (const listener of required) listener();
    },
    ...(reader.password !== undefined ? { password: reader.password } : {}),
    ...(reader.profile !== undefined ? { profile: reader.profile } : {}),
    ...(reader.charset !== undefined ? { charset: reader.charset } : {}),
  };
  if (reader.emulated) {
    const emulated = emulatedZvtReader({
      ...settings,
      memoryFile: reader.emulated.state_file,
      terminal: { delayMs: reader.emulated.delay_ms },
      logger,
    });
    return {
      reader: emulated.reader,
      endOfDay: zvtEndOfDay(emulated.reader),
      capabilities: emulated.capabilities,
      facts: facts(`emulated ZVT terminal (${reader.profile ?? 'generic'} profile)`),
      ...known,
      close: emulated.close,
    };
  }
  const target = reader.tcp
    ? { tcp: reader.tcp }
    : { port: reader.port ?? '', baudRate: reader.baud_rate };
  const driverReader = new DriverReader(zvtConnection(target, { ...settings, logger }), logger);
  return {
    reader: driverReader,
    endOfDay: zvtEndOfDay(driverReader),
    capabilities: zvtReaderCapabilities(reader.profile),
    facts: facts(`ZVT terminal (${reader.profile ?? 'generic'} profile)`),
    ...known,
    close: () => driverReader.close(),
  };
}

function withPrinter(hardware: Omit<Hardware, 'printer'>, config: PrinterConfig): Hardware {
  const driverPrinter = openPrinter(config);
  return {
    ...hardware,
    ...(driverPrinter ? { printer: driverPrinter } : {}),
    close: async () => {
      await hardware.close();
      await driverPrinter?.close();
    },
  };
}

function serialReader(
  path: string,
  baudRate: number,
  tap?: (stream: Duplex) => void,
): OpenReaderConnection {
  return async () => {
    const port = await openSerialPort(path, { baudRate });
    tap?.(port.stream);
    const reader = SerialCardReader.connect(port.stream, { link: { baudRate } });
    return {
      reader,
      description: port.description,
      close: async () => {
        await reader.close();
        await port.close();
      },
    };
  };
}

function openPrinter(config: PrinterConfig): PrinterPort | undefined {
  switch (config.type) {
    case 'none':
      return undefined;
    case 'serial':
      return new DriverPrinter(() => openSerialPort(config.path, { baudRate: config.baud_rate }), {
        headWidth: config.head_width,
        keepOpen: true,
      });
    case 'tcp':
      return new DriverPrinter(
        async () => {
          const socket = await connectTcpPrinter({ host: config.host, port: config.port });
          return {
            stream: socket,
            close: () =>
              new Promise<void>((resolve) => {
                if (socket.destroyed) return resolve();
                socket.once('close', () => resolve());
                socket.end(() => socket.destroy());
              }),
          };
        },
        { headWidth: config.head_width, keepOpen: false },
      );
  }
}
