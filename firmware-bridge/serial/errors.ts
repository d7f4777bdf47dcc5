/** The one error type of the serial link: a `code` to branch on, as node-serialport does. */

export type SerialLinkErrorCode =
  /** The peer answered none of the transmissions: delivery is unknown (it may have arrived). */
  | 'ACK_TIMEOUT'
  /** The peer received the frame intact and refused the message (NAK); `reason` says why. */
  | 'REJECTED'
  /** The message failed our own schema before it was sent; nothing was sent. */
  | 'INVALID_MESSAGE'
  /** The message's JSON exceeds the frame's payload limit; nothing was sent. */
  | 'PAYLOAD_TOO_LARGE'
  /** close() was called; queued messages were never sent. */
  | 'LINK_CLOSED'
  /** The underlying stream ended, closed or failed. */
  | 'PORT_CLOSED'
  /** The reader acknowledged a query but sent no answer in time (card-reader driver). */
  | 'ANSWER_TIMEOUT';

export class SerialLinkError extends Error {
  override readonly name = 'SerialLinkError';
  /**
   * True when the peer or the port is gone (ACK_TIMEOUT, PORT_CLOSED), as serialport's.
   * ANSWER_TIMEOUT is not: the reader's link answered; ask again.
   */
  readonly disconnected: boolean;
  /** For REJECTED and INVALID_MESSAGE: the validation failure, in words. */
  readonly reason?: string;

  constructor(
    readonly code: SerialLinkErrorCode,
    message: string,
    options: { reason?: string; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.disconnected = code === 'ACK_TIMEOUT' || code === 'PORT_CLOSED';
    if (options.reason !== undefined) this.reason = options.reason;
  }
}
