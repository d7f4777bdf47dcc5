/**
 * What both ZVT transports give the protocol sessions: APDUs in, APDUs out. The serial link
 * (serial-link.ts) adds framing, CRC and the link's ACK/NAK; the TCP channel (tcp-channel.ts)
 * only the message boundaries. Sessions (session.ts, pt-session.ts) see no difference.
 *
 * APDUs travel as raw bytes, not decoded messages: a 06 0F can only be read knowing the
 * command it completes, which only the session knows.
 */
import type { ZvtError } from './errors.js';

export type ApduChannelEvents = {
  /** One complete APDU as received (not yet decoded). */
  apdu: [apdu: Buffer];
  /**
   * Bytes thrown away without an answer: line noise and half frames (serial), APDUs over
   * the size limit or cut by the end of the stream (TCP). For logs and bench tools.
   */
  drop: [info: { reason: string; bytes: number }];
  /** The channel stopped: no error after close(), the reason when the line went away. */
  close: [error?: ZvtError];
};

export interface ApduChannel {
  /**
   * Sends one APDU. Resolves when the peer's link acknowledged it (serial) or when it was
   * handed to the socket (TCP). Rejects with a ZvtError (`NO_LINK_ACK`, `APDU_TOO_LARGE`,
   * `CLOSED`, `PORT_CLOSED`). APDUs go out one at a time in the order of the calls.
   */
  send(apdu: Buffer): Promise<void>;
  /** Lets go of the line (its owner closes it); pending sends reject with CLOSED. */
  close(): Promise<void>;
  readonly closed: boolean;
  on<E extends keyof ApduChannelEvents>(
    event: E,
    listener: (...args: ApduChannelEvents[E]) => void,
  ): this;
  off<E extends keyof ApduChannelEvents>(
    event: E,
    listener: (...args: ApduChannelEvents[E]) => void,
  ): this;
  once<E extends keyof ApduChannelEvents>(
    event: E,
    listener: (...args: ApduChannelEvents[E]) => void,
  ): this;
}
