/**
 * Reads a printer's one-byte answers from a Duplex. Each wait names the kind of byte it
 * takes (a DLE EOT answer, a GS r answer); a byte that no wait takes (a late answer, XON,
 * XOFF, noise, an unsolicited status) is dropped and counted, so it can never be taken
 * for the answer to a later query.
 */
import type { Duplex } from 'node:stream';
import type { Timers } from '../../common/clock.js';
import { PrinterError } from './errors.js';

interface Waiter {
  accepts: (byte: number) => boolean;
  resolve: (byte: number) => void;
  reject: (error: PrinterError) => void;
}

export class ReplyReader {
  /** Bytes received that answered nothing. */
  strayBytes = 0;
  private readonly waiters = new Set<Waiter>();
  private closed?: PrinterError;

  private readonly onData = (chunk: Buffer) => {
    for (const byte of chunk) {
      const waiter = [...this.waiters].find((w) => w.accepts(byte));
      if (waiter) {
        this.waiters.delete(waiter);
        waiter.resolve(byte);
      } else {
        this.strayBytes++;
      }
    }
  };
  private readonly onEnd = () => this.fail(undefined);
  private readonly onError = (error: Error) => this.fail(error);

  constructor(
    private readonly stream: Duplex,
    private readonly timers: Timers,
  ) {
    stream.on('data', this.onData);
    stream.on('end', this.onEnd);
    stream.on('close', this.onEnd);
    stream.on('error', this.onError);
    if (stream.destroyed) this.fail(undefined);
  }

  /** The stream's failure, once it has ended, closed or failed. */
  get failure(): PrinterError | undefined {
    return this.closed;
  }

  /**
   * The next byte that `accepts` takes, received after this call. The answer rejects with
   * TIMEOUT after timeoutMs, or DISCONNECTED when the stream goes; cancel() withdraws the
   * wait (its answer then never settles) and clears its timer.
   */
  wait(
    accepts: (byte: number) => boolean,
    timeoutMs: number,
    what: string,
  ): { answer: Promise<number>; cancel(): void } {
    let cancel = () => {};
    if (this.closed) return this.handled({ answer: Promise.reject(this.closed), cancel });
    const answer = new Promise<number>((resolve, reject) => {
      const timer = this.timers.setTimeout(() => {
        this.waiters.delete(waiter);
        reject(
          new PrinterError('TIMEOUT', `printer did not answer ${what} within ${timeoutMs} ms`),
        );
      }, timeoutMs);
      const waiter: Waiter = {
        accepts,
        resolve: (byte) => {
          this.timers.clearTimeout(timer);
          resolve(byte);
        },
        reject: (error) => {
          this.timers.clearTimeout(timer);
          reject(error);
        },
      };
      this.waiters.add(waiter);
      cancel = () => {
        this.timers.clearTimeout(timer);
        this.waiters.delete(waiter);
      };
    });
    return this.handled({ answer, cancel: () => cancel() });
  }

  /** A caller that gives up on a wait (its write failed) must not leave a rejection unhandled. */
  private handled<T extends { answer: Promise<number> }>(wait: T): T {
    wait.answer.catch(() => undefined);
    return wait;
  }

  /** Stops reading; pending waits fail as DISCONNECTED. */
  detach(): void {
    this.fail(undefined, 'printer driver closed');
    this.stream.off('data', this.onData);
    this.stream.off('end', this.onEnd);
    this.stream.off('close', this.onEnd);
    this.stream.off('error', this.onError);
  }

  private fail(cause: Error | undefined, message = 'printer stream closed'): void {
    this.closed ??= new PrinterError(
      'DISCONNECTED',
      cause ? `${message}: ${cause.message}` : message,
      { cause },
    );
    for (const waiter of this.waiters) waiter.reject(this.closed);
    this.waiters.clear();
  }
}
