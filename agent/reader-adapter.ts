/**
 * ReaderPort over firmware-bridge's card-reader driver (`CardReader`), on a line that may
 * come and go: a USB reader unplugged, a ser2net bridge restarted. When the driver's line
 * closes with an error, the next call opens it again; until then calls reject with
 * `disconnected: true`, which the executor answers by asking `lastTransaction()` later.
 */
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { CardReader } from '../firmware-bridge/reader/card-reader.js';
import type {
  ReaderEvents,
  ReaderListener,
  ReaderPort,
  ReaderReadings,
  ReaderRecord,
  ReaderStart,
} from './ports.js';

export interface ReaderConnection {
  reader: CardReader;
  /** For logs: `/dev/ttyACM0 (115200 baud)`, `emulated`. */
  description: string;
  /** Closes the driver and lets go of its line. */
  close(): Promise<void>;
}

export type OpenReaderConnection = () => Promise<ReaderConnection>;

const FORWARDED = ['progress', 'customer_identified', 'result', 'status'] as const;

export class DriverReader implements ReaderPort {
  private readonly events = new EventEmitter();
  private current: ReaderConnection | undefined;
  private opening: Promise<ReaderConnection> | undefined;
  private closed = false;

  constructor(
    private readonly open: OpenReaderConnection,
    private readonly logger: Logger,
  ) {}

  start(request: ReaderStart): Promise<void> {
    return this.use((reader) => reader.start(request));
  }

  continue(transactionId: string, requestedAmount?: number): Promise<void> {
    return this.use((reader) => reader.continue(transactionId, requestedAmount));
  }

  cancel(transactionId: string): Promise<void> {
    return this.use((reader) => reader.cancel(transactionId));
  }

  reverse(transactionId: string): Promise<void> {
    return this.use((reader) => reader.reverse(transactionId));
  }

  async lastTransaction(): Promise<ReaderRecord | null> {
    return (await this.use((reader) => reader.lastTransaction())) ?? null;
  }

  status(): Promise<ReaderReadings> {
    return this.use((reader) => reader.status());
  }

  on<E extends keyof ReaderEvents>(event: E, listener: ReaderListener<E>): void {
    this.events.on(event, listener);
  }

  off<E extends keyof ReaderEvents>(event: E, listener: ReaderListener<E>): void {
    this.events.off(event, listener);
  }

  /** Opens the line now (at start, so that a wrong port shows in the log at once). */
  async connect(): Promise<void> {
    await this.connection();
  }

  async close(): Promise<void> {
    this.closed = true;
    const current = this.current ?? (await this.opening?.catch(() => undefined));
    this.current = undefined;
    await current?.close();
  }

  /** Calls the driver itself (its functions beyond the port: a ZVT end-of-day). */
  withDriver<T>(call: (reader: CardReader) => Promise<T>): Promise<T> {
    return this.use(call);
  }

  private async use<T>(call: (reader: CardReader) => Promise<T>): Promise<T> {
    const connection = await this.connection();
    return call(connection.reader);
  }

  private connection(): Promise<ReaderConnection> {
    if (this.closed) return Promise.reject(unavailable('the reader is closed'));
    if (this.current) return Promise.resolve(this.current);
    this.opening ??= this.open().then(
      (connection) => {
        this.opening = undefined;
        this.attach(connection);
        return connection;
      },
      (error: unknown) => {
        this.opening = undefined;
        this.logger.warn(
          { err: { message: (error as Error).message } },
          'cannot open the card reader',
        );
        throw unavailable((error as Error).message);
      },
    );
    return this.opening;
  }

  private attach(connection: ReaderConnection): void {
    this.current = connection;
    this.logger.info({ reader: connection.description }, 'card reader line open');
    const { reader } = connection;
    for (const event of FORWARDED) {
      reader.on(event, (payload: unknown) => this.events.emit(event, payload));
    }
    reader.once('close', (error) => {
      if (this.current !== connection) return;
      this.current = undefined;
      if (error) {
        this.logger.warn(
          { err: { message: error.message, code: error.code } },
          'card reader line lost',
        );
        void connection.close().catch(() => undefined);
      }
    });
  }
}

function unavailable(reason: string): Error {
  return Object.assign(new Error(`the card reader is not available: ${reason}`), {
    code: 'PORT_CLOSED',
    disconnected: true,
  });
}
