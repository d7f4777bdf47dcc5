/**
 * The card-reader contract against the emulated firmware on an in-memory line, or, with
 * TEST_READER_PORT set (a serial port path or tcp://HOST:PORT), against a real reader:
 *
 *   TEST_READER_PORT=/dev/ttyUSB0 npx vitest run firmware-bridge/reader
 */
import { describe } from 'vitest';
import { describeCardReaderContract } from './card-reader.contract.js';
import { emulatedReader, realReader } from './testing/readers-under-test.js';

const port = process.env.TEST_READER_PORT;

describe(
  port
    ? `card reader at ${port} (TEST_READER_PORT)`
    : 'card reader: emulated firmware over a stream pair',
  () => {
    describeCardReaderContract(
      async () => (port ? realReader(port) : emulatedReader()),
      port ? { testTimeoutMs: 300_000 } : {},
    );
  },
);
