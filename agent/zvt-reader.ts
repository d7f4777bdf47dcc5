/**
 * The reader port over a ZVT payment terminal (firmware-bridge/zvt/reader/): a real one on
 * a serial device or over TCP, or the emulated ZVT terminal in process (bench, demo,
 * simulated terminals, tests). The driver keeps its own record of its transactions in the
 * agent's data directory (`zvt-reader.json`): ZVT has no transaction ids, and after a crash
 * that record is what tells which transaction the terminal's last one was.
 */
import path from 'node:path';
import pino, { type Logger } from 'pino';
import { FileTerminalMemory } from '../firmware-bridge/emulator/zvt/terminal-memory.js';
import { serveSerial } from '../firmware-bridge/emulator/zvt/terminal-server.js';
import {
  ZvtTerminalEmulator,
  type ZvtTerminalOptions,
} from '../firmware-bridge/emulator/zvt/zvt-terminal.js';
import { createStreamPair, type StreamPairOptions } from '../firmware-bridge/serial/stream-pair.js';
import type { ApduChannel } from '../firmware-bridge/zvt/channel.js';
import { openZvtChannel, type ZvtTarget } from '../firmware-bridge/zvt/reader/connect.js';
import type { ZvtCharset } from '../firmware-bridge/zvt/charsets.js';
import { zvtProfile, type ZvtProfileName } from '../firmware-bridge/zvt/reader/profiles.js';
import { settlementOf, type ZvtSettlement } from '../firmware-bridge/zvt/reader/settlement.js';
import {
  openZvtCardReader,
  ZvtCardReader,
  zvtCapabilities,
  type ZvtReaderOptions,
} from '../firmware-bridge/zvt/reader/zvt-card-reader.js';
import { ZvtSerialLink } from '../firmware-bridge/zvt/serial-link.js';
import type { ReaderCapabilities } from '../protocol/reader-capabilities.js';
import type { LineTrace } from './fleet-trace.js';
import {
  DriverReader,
  type OpenReaderConnection,
  type ReaderConnection,
} from './reader-adapter.js';

/** The driver's record, beside the journal: both must survive a crash together. */
export const zvtStateFile = (dataDir: string): string => path.join(dataDir, 'zvt-reader.json');

export interface ZvtDriverSettings {
  password?: string;
  profile?: ZvtProfileName;
  /** Text the terminal does not announce a character set for; default the profile's. */
  charset?: ZvtCharset;
  /** The driver's own record (zvtStateFile). */
  stateFile: string;
  logger: Logger;
  /** ZVT timers, for tests (defaults T3 5 s, T4 180 s). */
  t3Ms?: number;
  t4Ms?: number;
  /** Follows the APDUs of each (re)opened channel, for remote diagnostics. */
  trace?: LineTrace;
  /** The terminal's software version when a status enquiry brings a new one. */
  onSoftwareVersion?: (version: string) => void;
  /** The terminal said it needs an end-of-day (status F0, or a command refused with F0). */
  onEndOfDayRequired?: () => void;
}

/** What a ZVT terminal can do under the configured profile: the agent says it to the relay. */
export const zvtReaderCapabilities = (profile?: ZvtProfileName): ReaderCapabilities =>
  zvtCapabilities(zvtProfile(profile));

/** Opens the line and the driver on it (registering with the terminal) on every (re)open. */
export function zvtConnection(
  target: ZvtTarget,
  settings: ZvtDriverSettings,
): OpenReaderConnection {
  return async () => {
    const channel = await openZvtChannel(target);
    return driverOn(channel, channel.description, settings);
  };
}

/** The driver over an open channel; a failed registration closes the channel. */
export async function driverOn(
  channel: ApduChannel,
  description: string,
  settings: ZvtDriverSettings,
): Promise<ReaderConnection> {
  const { logger, password, profile, stateFile, t3Ms, t4Ms, trace, onSoftwareVersion } = settings;
  const { onEndOfDayRequired, charset } = settings;
  trace?.tapApdus(channel);
  const options: ZvtReaderOptions = {
    channel,
    stateFile,
    logger: { warn: (message, context) => logger.warn(context ?? {}, message) },
    ...(password !== undefined ? { password } : {}),
    ...(profile !== undefined ? { profile } : {}),
    ...(charset !== undefined ? { charset } : {}),
    ...(t3Ms !== undefined ? { t3Ms } : {}),
    ...(t4Ms !== undefined ? { t4Ms } : {}),
    ...(onSoftwareVersion ? { onSoftwareVersion } : {}),
    ...(onEndOfDayRequired ? { onEndOfDayRequired } : {}),
  };
  const reader = await openZvtCardReader(options);
  return { reader, description, close: () => reader.close() };
}

/** The terminal's end-of-day (06 50) through the reader's current line, as a settlement. */
export function zvtEndOfDay(reader: DriverReader): () => Promise<ZvtSettlement> {
  return () =>
    reader.withDriver(async (driver) => {
      if (!(driver instanceof ZvtCardReader)) throw new Error('the reader is not a ZVT terminal');
      const outcome = await driver.endOfDay();
      return settlementOf(outcome, driver.profile.charset, driver.registeredCurrency);
    });
}

export interface EmulatedZvtReader {
  reader: DriverReader;
  terminal: ZvtTerminalEmulator;
  capabilities: ReaderCapabilities;
  close(): Promise<void>;
}

export interface EmulatedZvtOptions extends Omit<ZvtDriverSettings, 'logger'> {
  terminal?: ZvtTerminalOptions;
  /** The emulated terminal's memory file (omitted: kept in memory only). */
  memoryFile?: string;
  line?: StreamPairOptions;
  logger?: Logger;
}

/**
 * The emulated ZVT terminal in process, on an in-memory serial line with the ZVT serial
 * framing, behind the agent's real adapter and the real driver: the whole ZVT path, no
 * hardware. Each (re)open takes a new line, as a cable plugged in again.
 */
export function emulatedZvtReader(options: EmulatedZvtOptions): EmulatedZvtReader {
  const { terminal: terminalOptions, memoryFile, line, logger, ...driver } = options;
  const password = driver.password ?? terminalOptions?.password;
  const terminal = new ZvtTerminalEmulator({
    ...terminalOptions,
    ...(password !== undefined ? { password } : {}),
    ...(memoryFile !== undefined ? { memory: new FileTerminalMemory(memoryFile) } : {}),
  });
  const log = logger ?? pino({ level: 'silent' });
  const reader = new DriverReader(async () => {
    const pair = createStreamPair(line);
    const session = serveSerial(terminal, pair.b);
    try {
      const connection = await driverOn(new ZvtSerialLink(pair.a), 'emulated ZVT terminal', {
        ...driver,
        ...(password !== undefined ? { password } : {}),
        logger: log,
      });
      return {
        ...connection,
        close: async () => {
          await connection.close();
          await session.close();
          pair.a.destroy();
        },
      };
    } catch (error) {
      await session.close();
      pair.a.destroy();
      throw error;
    }
  }, log);
  return {
    reader,
    terminal,
    capabilities: zvtReaderCapabilities(driver.profile),
    close: async () => {
      await reader.close();
      await terminal.close();
    },
  };
}
