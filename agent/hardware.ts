/**
 * The card reader and printer a config names, opened through firmware-bridge: a serial
 * device, or the emulated reader in process on an in-memory line with its memory in
 * `reader.emulated.state_file`, so that it too survives a crash of the agent.
 */
import type { Logger } from 'pino';
import { FileReaderMemory } from '../firmware-bridge/emulator/file-reader-memory.js';
import { connectTcpPrinter } from '../firmware-bridge/printer/tcp.js';
import { SerialCardReader } from '../firmware-bridge/reader/serial-card-reader.js';
import { openSerialPort } from '../firmware-bridge/transport/serial-port.js';
import type { PrinterConfig, ReaderConfig } from './config.js';
import { emulatedReader } from './emulated-reader.js';
import type { PrinterPort } from './ports.js';
import { DriverPrinter } from './printer-adapter.js';
import { DriverReader, type OpenReaderConnection } from './reader-adapter.js';
import { partLogger } from '../common/logging.js';

export interface Hardware {
  reader: DriverReader;
  printer?: PrinterPort;
  close(): Promise<void>;
}

export function openHardware(
  reader: ReaderConfig,
  printer: PrinterConfig,
  logger: Logger,
): Hardware {
  const readerLogger = partLogger(logger, 'reader');
  const emulated = reader.emulated
    ? emulatedReader({
        memory: new FileReaderMemory(reader.emulated.state_file),
        delayMs: reader.emulated.delay_ms,
        logger: readerLogger,
      })
    : undefined;
  const driverReader =
    emulated?.reader ??
    new DriverReader(serialReader(reader.port ?? '', reader.baud_rate), readerLogger);
  const driverPrinter = openPrinter(printer);
  return {
    reader: driverReader,
    ...(driverPrinter ? { printer: driverPrinter } : {}),
    close: async () => {
      await (emulated ? emulated.close() : driverReader.close());
      await driverPrinter?.close();
    },
  };
}

function serialReader(path: string, baudRate: number): OpenReaderConnection {
  return async () => {
    const port = await openSerialPort(path, { baudRate });
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
