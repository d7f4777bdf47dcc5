/**
 * The host-side card-reader driver: `CardReader` over a `SerialLink<'host'>`, which runs
 * over any byte Duplex (a serialport, a pty, a TCP socket, one end of a stream pair).
 *
 * ```
 *   agent ──start/continue/cancel/reverse──▶ SerialCardReader ──transaction.*──▶ reader
 *         ◀── 'progress' 'customer_identified' 'result' 'status' events ◀──────┘
 *   lastTransaction() / status(): a query with a query_id, answered within answerTimeoutMs
 * ```
 *
 * Commands resolve when the reader acknowledged them; what they lead to arrives as events.
 */
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import { SerialLinkError } from '../serial/errors.js';
import { SerialLink, type SerialLinkOptions } from '../serial/link.js';
import type { HostMessage, ReaderMessage } from '../serial/messages.js';
import { systemTimers, type Timers } from '../../common/clock.js';
import {
  NATIVE_READER_CAPABILITIES,
  type ReaderCapabilities,
} from '../../protocol/reader-capabilities.js';
import type {
  CardReader,
  CardReaderEvents,
  LastTransactionRecord,
  ReaderStart,
  ReaderStatus,
} from './card-reader.js';
import { PendingQueries } from './pending-queries.js';

export interface SerialCardReaderOptions {
  /**
   * How long the reader has to answer a query it acknowledged, in ms (default 5000). Keeps
   * recovery from hanging on firmware that takes a query and never answers it; long enough
   * for the reader's own retransmissions of a large answer (a last transaction with its
   * receipts) on a noisy line at 115200 baud.
   */
  answerTimeoutMs?: number;
  timers?: Timers;
}

export interface ConnectCardReaderOptions extends SerialCardReaderOptions {
  /** Options of the link the driver creates (ack timeout, retries, baud rate). */
  link?: Omit<SerialLinkOptions<'host'>, 'role'>;
}

export class SerialCardReader extends EventEmitter<CardReaderEvents> implements CardReader {
  readonly capabilities: ReaderCapabilities = NATIVE_READER_CAPABILITIES;
  private readonly lastQueries: PendingQueries<LastTransactionRecord | undefined>;
  private readonly statusQueries: PendingQueries<ReaderStatus>;
  /** Random per driver, so that answers meant for a previous host session never match. */
  private readonly session = randomBytes(4).toString('hex');
  private nextQuery = 1;

  /** A driver on its own new link over `port`; close() closes the link, not the port. */
  static connect(port: Duplex, options: ConnectCardReaderOptions = {}): SerialCardReader {
    const link = new SerialLink(port, { ...options.link, role: 'host' });
    return new SerialCardReader(link, options);
  }

  constructor(
    readonly link: SerialLink<'host'>,
    options: SerialCardReaderOptions = {},
  ) {
    super();
    const timeoutMs = options.answerTimeoutMs ?? 5000;
    const timers = options.timers ?? systemTimers;
    this.lastQueries = new PendingQueries('last_transaction.query', timeoutMs, timers);
    this.statusQueries = new PendingQueries('status.query', timeoutMs, timers);
    link.on('message', this.onMessage);
    link.once('close', this.onClose);
  }

  start(command: ReaderStart): Promise<void> {
    return this.link.send({ ...command, v: 1, type: 'transaction.start' });
  }

  continue(transactionId: string, requestedAmount?: number): Promise<void> {
    return this.link.send({
      v: 1,
      type: 'transaction.continue',
      transaction_id: transactionId,
      ...(requestedAmount === undefined ? {} : { requested_amount: requestedAmount }),
    });
  }

  cancel(transactionId: string): Promise<void> {
    return this.link.send({ v: 1, type: 'transaction.cancel', transaction_id: transactionId });
  }

  reverse(transactionId: string): Promise<void> {
    return this.link.send({ v: 1, type: 'transaction.reverse', transaction_id: transactionId });
  }

  lastTransaction(): Promise<LastTransactionRecord | undefined> {
    return this.query(this.lastQueries, (query_id) => ({
      v: 1,
      type: 'last_transaction.query',
      query_id,
    }));
  }

  status(): Promise<ReaderStatus> {
    return this.query(this.statusQueries, (query_id) => ({ v: 1, type: 'status.query', query_id }));
  }

  async close(): Promise<void> {
    await this.link.close();
  }

  private query<T>(pending: PendingQueries<T>, message: (id: string) => HostMessage): Promise<T> {
    const id = `${this.session}-${this.nextQuery++}`;
    const answer = pending.wait(id);
    this.link.send(message(id)).then(
      () => pending.acknowledged(id),
      (error: SerialLinkError) => pending.fail(id, error),
    );
    return answer;
  }

  private readonly onMessage = (message: ReaderMessage): void => {
    switch (message.type) {
      case 'transaction.progress': {
        const { v: _v, type: _t, ...progress } = message;
        this.emit('progress', progress);
        return;
      }
      case 'transaction.customer_identified': {
        const { v: _v, type: _t, ...identified } = message;
        this.emit('customer_identified', identified);
        return;
      }
      case 'transaction.result': {
        const { v: _v, type: _t, ...result } = message;
        this.emit('result', result);
        return;
      }
      case 'last_transaction.answer':
        this.lastQueries.answer(message.query_id, message.transaction ?? undefined);
        return;
      case 'status.report': {
        const { v: _v, type: _t, query_id, ...status } = message;
        // A report without a query id that comes after the reader took the query is current.
        this.statusQueries.answer(query_id, status, query_id === undefined);
        this.emit('status', status);
        return;
      }
    }
  };

  private readonly onClose = (error?: SerialLinkError): void => {
    const failure = error ?? new SerialLinkError('LINK_CLOSED', 'the card reader was closed');
    this.lastQueries.failAll(failure);
    this.statusQueries.failAll(failure);
    this.link.off('message', this.onMessage);
    this.emit('close', error);
  };
}
