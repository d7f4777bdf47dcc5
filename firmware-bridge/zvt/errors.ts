/**
 * The errors of the ZVT layer. Two kinds, kept apart on purpose:
 *
 * - `ZvtDecodeError` is a value, never thrown: decoding hostile bytes returns
 *   `{ ok: false, error }` with a stable `code`, a message in words and the `offset` (from the
 *   start of the APDU, or of the buffer given) where the bytes stopped making sense.
 * - `ZvtError` is thrown (rejected) by links and sessions. Callers branch on `code` or on the
 *   flags `disconnected` (the line or the peer is gone) and `outcomeUnknown` (a command may
 *   have run on the terminal: reconcile before retrying), never on the message, as with
 *   node-serialport's errors and `SerialLinkError`.
 *
 * Encoding our own values throws a `RangeError`: a value that cannot be encoded is a bug in
 * the caller, not line noise.
 */

export type ZvtDecodeErrorCode =
  /** Fewer bytes than the structure announces (header, length, field). */
  | 'truncated'
  /** Bytes left over after the structure ended. */
  | 'trailing-bytes'
  /** A BMP tag outside the table: its length is unknown, so nothing after it can be read. */
  | 'unknown-bmp'
  /** An LL/LLL length byte that is not `Fx` with x a decimal digit. */
  | 'bad-var-length'
  /** A BER length form other than 00-7F, 81 nn, 82 hh ll. */
  | 'bad-ber-length'
  /** A TLV tag longer than 4 bytes. */
  | 'bad-tlv-tag'
  /** A field that must be decimal BCD holds a nibble A-F. */
  | 'bad-bcd'
  /** A mandatory field of the message is absent. */
  | 'missing-field'
  /** Larger than the configured limit. */
  | 'too-large';

export interface ZvtDecodeError {
  code: ZvtDecodeErrorCode;
  message: string;
  /** Byte offset of the problem, counted from the start of what was being decoded. */
  offset: number;
}

export type Decoded<T> = { ok: true; value: T } | { ok: false; error: ZvtDecodeError };

export const decoded = <T>(value: T): Decoded<T> => ({ ok: true, value });

export const failure = <T = never>(
  code: ZvtDecodeErrorCode,
  message: string,
  offset: number,
): Decoded<T> => ({ ok: false, error: { code, message, offset } });

/** The same failure with its offset moved by `base` (a nested structure's position). */
export function shifted<T>(result: Decoded<unknown>, base: number): Decoded<T> {
  if (result.ok) throw new Error('shifted() takes a failure');
  return { ok: false, error: { ...result.error, offset: result.error.offset + base } };
}

export type ZvtErrorCode =
  /** The serial peer answered none of the transmissions (or only NAKs): delivery unknown. */
  | 'NO_LINK_ACK'
  /** The PT did not accept the command within T3 (no 80 00 00): it may have taken it. */
  | 'T3_TIMEOUT'
  /** The PT, as master, was silent for longer than T4: the command's outcome is unknown. */
  | 'T4_TIMEOUT'
  /** The ECR did not answer a PT message in time (PT side). */
  | 'ANSWER_TIMEOUT'
  /** A command is already running on this session. */
  | 'BUSY'
  /** The peer sent something that makes no sense at this point of the protocol. */
  | 'PROTOCOL_ERROR'
  /** The APDU is larger than the configured limit; nothing was sent. */
  | 'APDU_TOO_LARGE'
  /** close() was called. */
  | 'CLOSED'
  /** The underlying stream ended, closed or failed. */
  | 'PORT_CLOSED'
  /**
   * The PT went past a bound of one command (messages, bytes, total time) or sent too much
   * outside one: the session let go of the line, as if it had been lost (session.ts).
   */
  | 'LIMIT_EXCEEDED';

const DISCONNECTED: ReadonlySet<ZvtErrorCode> = new Set([
  'NO_LINK_ACK',
  'PORT_CLOSED',
  'LIMIT_EXCEEDED',
]);
const OUTCOME_UNKNOWN: ReadonlySet<ZvtErrorCode> = new Set([
  'NO_LINK_ACK',
  'T3_TIMEOUT',
  'T4_TIMEOUT',
  'PORT_CLOSED',
  'PROTOCOL_ERROR',
  'LIMIT_EXCEEDED',
]);

export class ZvtError extends Error {
  override readonly name = 'ZvtError';
  /** The line or the peer is gone (as node-serialport's flag). */
  readonly disconnected: boolean;
  /**
   * The command may or may not have run on the PT. Set for every failure after the command
   * left this side (`CLOSED` too when the command was already on its way); the caller must
   * reconcile (Repeat Receipt 06 20) before it reports a failure or tries again.
   */
  readonly outcomeUnknown: boolean;

  constructor(
    readonly code: ZvtErrorCode,
    message: string,
    options: { cause?: unknown; outcomeUnknown?: boolean } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.disconnected = DISCONNECTED.has(code);
    this.outcomeUnknown = options.outcomeUnknown ?? OUTCOME_UNKNOWN.has(code);
  }
}
