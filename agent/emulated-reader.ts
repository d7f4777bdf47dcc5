/**
 * The emulated card-reader firmware in process on an in-memory serial line, behind the
 * agent's real adapter (DriverReader over SerialCardReader): the whole serial protocol, no
 * hardware. For `reader.emulated` in the config, tests and benches; `memory` decides
 * whether its record survives the process (FileReaderMemory).
 */
import type { Duplex } from 'node:stream';
import pino, { type Logger } from 'pino';
import {
  CardReaderFirmware,
  type CardReaderFirmwareOptions,
} from '../firmware-bridge/emulator/card-reader-firmware.js';
import { SerialCardReader } from '../firmware-bridge/reader/serial-card-reader.js';
import { createStreamPair, type StreamPairOptions } from '../firmware-bridge/serial/stream-pair.js';
import { DriverReader } from './reader-adapter.js';

export interface EmulatedReader {
  reader: DriverReader;
  firmware: CardReaderFirmware;
  close(): Promise<void>;
}

export function emulatedReader(
  options: CardReaderFirmwareOptions & {
    line?: StreamPairOptions;
    logger?: Logger;
    /** Sees the host's end of the line before the driver uses it (fleet-trace.ts). */
    tap?: (stream: Duplex) => void;
  } = {},
): EmulatedReader {
  const { line, logger, tap, ...firmwareOptions } = options;
  const firmware = new CardReaderFirmware(firmwareOptions);
  const reader = new DriverReader(
    async () => {
      const pair = createStreamPair(line);
      firmware.serve(pair.b);
      tap?.(pair.a);
      const driver = SerialCardReader.connect(pair.a);
      return {
        reader: driver,
        description: 'emulated (stream pair)',
        close: async () => {
          await driver.close();
          pair.a.destroy();
        },
      };
    },
    logger ?? pino({ level: 'silent' }),
  );
  return {
    reader,
    firmware,
    close: async () => {
      await reader.close();
      await firmware.close();
    },
  };
}
