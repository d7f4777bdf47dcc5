/**
 * The ZVT TCP transport as an ApduChannel: APDUs written back to back on a socket, split
 * by tcp-splitter.ts. The PT listens (default port 20007; Feig cVEND 22000) and the ECR
 * connects; `connectZvtTcp` opens the ECR side with the socket options of the bridge's
 * TCP transport (Nagle off, keep-alive), so one APDU never waits for the next.
 *
 * There is no link acknowledgement on TCP: `send()` resolves when the socket took the
 * bytes, and a lost connection is the only transport error (EV drops the connection on any
 * error and registers again; the session layer decides that, not this file).
 */
import { EventEmitter } from 'node:events';
import type { Duplex } from 'node:stream';
import { connectTcp, type TcpAddress, type TcpOptions } from '../transport/tcp.js';
import type { OpenPort } from '../transport/port.js';
import type { ApduChannel, ApduChannelEvents } from './channel.js';
import { ZvtError } from './errors.js';
import { ApduSplitter, type SplitterDrop } from './tcp-splitter.js';
import { DEFAULT_MAX_APDU_LENGTH } from './serial-frame-decoder.js';

/** The port ZVT PTs listen on by default (WS, PZ, KZ). */
export const ZVT_TCP_PORT = 20007;

export interface ZvtTcpChannelOptions {
  /** Largest APDU sent or accepted, header included (default 16384). */
  maxApduLength?: number;
}

export class ZvtTcpChannel extends EventEmitter<ApduChannelEvents> implements ApduChannel {
  private readonly splitter: ApduSplitter;
  private readonly maxApduLength: number;
  private closedFlag = false;
  private readonly onGone = (cause?: unknown) => {
    const detail = cause instanceof Error ? `: ${cause.message}` : '';
    this.shutdown(new ZvtError('PORT_CLOSED', `the TCP connection closed${detail}`, { cause }));
  };

  constructor(
    private readonly stream: Duplex,
    options: ZvtTcpChannelOptions = {},
  ) {
    super();
    this.maxApduLength = options.maxApduLength ?? DEFAULT_MAX_APDU_LENGTH;
    this.splitter = new ApduSplitter({ maxApduLength: this.maxApduLength });
    this.splitter.on('data', (apdu: Buffer) => {
      if (!this.closedFlag) this.emit('apdu', apdu);
    });
    this.splitter.on('drop', (info: SplitterDrop) => this.emit('drop', info));
    stream.pipe(this.splitter);
    stream.once('close', this.onGone);
    stream.once('end', this.onGone);
    stream.once('error', this.onGone);
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  send(apdu: Buffer): Promise<void> {
    if (this.closedFlag) return Promise.reject(new ZvtError('CLOSED', 'the TCP channel is closed'));
    if (apdu.length > this.maxApduLength) {
      return Promise.reject(
        new ZvtError(
          'APDU_TOO_LARGE',
          `an APDU of ${apdu.length} bytes exceeds ${this.maxApduLength}`,
        ),
      );
    }
    return new Promise((resolve, reject) => {
      this.stream.write(apdu, (error) => {
        if (!error) return resolve();
        reject(
          new ZvtError('PORT_CLOSED', `cannot write to the TCP connection: ${error.message}`, {
            cause: error,
          }),
        );
      });
    });
  }

  /** Stops reading; the socket stays open (its owner closes it). */
  close(): Promise<void> {
    this.shutdown(undefined);
    return Promise.resolve();
  }

  private shutdown(error: ZvtError | undefined): void {
    if (this.closedFlag) return;
    this.closedFlag = true;
    this.stream.off('close', this.onGone);
    this.stream.off('end', this.onGone);
    this.stream.off('error', this.onGone);
    this.stream.unpipe(this.splitter);
    this.splitter.destroy();
    this.emit('close', error);
  }
}

export interface ZvtTcpConnection {
  channel: ZvtTcpChannel;
  /** The socket and how to close it (`tcp://HOST:PORT`). */
  port: OpenPort;
  /** Closes the channel and the connection. */
  close(): Promise<void>;
}

/** Connects to a PT listening on `address` (port default 20007). */
export async function connectZvtTcp(
  address: { host: string; port?: number },
  options: ZvtTcpChannelOptions & TcpOptions = {},
): Promise<ZvtTcpConnection> {
  const target: TcpAddress = { host: address.host, port: address.port ?? ZVT_TCP_PORT };
  const port = await connectTcp(target, options);
  const channel = new ZvtTcpChannel(port.stream, options);
  return {
    channel,
    port,
    close: async () => {
      await channel.close();
      await port.close();
    },
  };
}
