/** The host-side card-reader driver: what the agent programs against. */
export type {
  CardReader,
  CardReaderEvent,
  CardReaderEvents,
  LastTransactionRecord,
  ReaderCustomerIdentified,
  ReaderProgress,
  ReaderResult,
  ReaderStart,
  ReaderStatus,
} from './card-reader.js';
export {
  SerialCardReader,
  type ConnectCardReaderOptions,
  type SerialCardReaderOptions,
} from './serial-card-reader.js';
export { ReaderEventLog } from './reader-events.js';
export { SerialLinkError, type SerialLinkErrorCode } from '../serial/errors.js';
