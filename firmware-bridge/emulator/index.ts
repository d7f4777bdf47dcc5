/** The emulated card reader: firmware, its memory, and the outcomes it plays. */
export {
  CardReaderFirmware,
  type CardReaderFirmwareEvents,
  type CardReaderFirmwareOptions,
} from './card-reader-firmware.js';
export { FileReaderMemory, MEMORY_FILE_HEADER, parseMemoryFile } from './file-reader-memory.js';
export {
  DEFAULT_MAX_RECORDS,
  InMemoryReaderMemory,
  ReaderRecord,
  type ReaderMemory,
} from './reader-memory.js';
export { READER_RESULTS, type ReaderOutcome } from './reader-results.js';
export type { BatteryOptions } from './reader-status.js';
export * from './scenarios.js';
