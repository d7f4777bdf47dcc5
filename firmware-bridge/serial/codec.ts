/**
 * The packet inside one SLIP frame of the card-reader serial link, and its CRC. Pure
 * functions: the stream transforms (encoder.ts, decoder.ts) add the SLIP byte stuffing.
 *
 * ```
 * wire:    END | SLIP-escaped packet | END        (END = 0xC0, see docs/serial-protocol.md)
 *
 * packet:  +---------+------------+---------+---------------+---------------+-------------+
 *          | version | flags|type | seq     | length        | payload       | CRC-32      |
 *          | 1 byte  | 1 byte     | 1 byte  | uint16 BE     | length bytes  | uint32 BE   |
 *          +---------+------------+---------+---------------+---------------+-------------+
 *          |<-------------- CRC-32 (IEEE 802.3, as zlib) covers these ----->|
 * ```
 */
import { crc32 } from 'node:zlib';

/** The only link-layer version this code speaks; any other is dropped as `bad-version`. */
export const LINK_VERSION = 1;

/** SLIP bytes of RFC 1055 (the defaults of `@serialport/parser-slip-encoder`). */
export const SLIP = { END: 0xc0, ESC: 0xdb, ESC_END: 0xdc, ESC_ESC: 0xdd } as const;

/** Frame types, in the low nibble of the flags|type byte. */
export const FRAME_TYPES = { DATA: 0x1, ACK: 0x2, NAK: 0x3 } as const;
export type FrameType = keyof typeof FRAME_TYPES;

/** Flag bit: the first DATA frame(s) of a sender's session (see SerialLink). */
export const FLAG_SYN = 0x80;

/** version + flags|type + seq + length. */
export const HEADER_LENGTH = 5;
export const CRC_LENGTH = 4;
/** The smallest packet: a header and a CRC around an empty payload. */
export const MIN_PACKET_LENGTH = HEADER_LENGTH + CRC_LENGTH;
/**
 * Default largest payload: fits the largest valid message (a result with every field at its
 * limit and receipts of escaped characters: 6459 bytes of JSON, see message-samples.ts)
 * while bounding the receive buffer of both ends.
 */
export const DEFAULT_MAX_PAYLOAD = 8192;
/** The length field is a uint16. */
export const ABSOLUTE_MAX_PAYLOAD = 0xffff;

export interface Frame {
  type: FrameType;
  /** 0-255, per direction; an ACK or NAK carries the seq of the DATA frame it answers. */
  seq: number;
  /** Set on a sender's first DATA frames until the peer has answered one. */
  syn?: boolean;
  /** DATA: the UTF-8 JSON of one message; NAK: UTF-8 JSON `{ "reason": string }`; ACK: empty. */
  payload: Buffer;
}

export type DropReason =
  'too-short' | 'oversize' | 'bad-escape' | 'bad-crc' | 'bad-version' | 'bad-type' | 'bad-length';

export type PacketResult = { ok: true; frame: Frame } | { ok: false; reason: DropReason };

const TYPE_BY_CODE = new Map<number, FrameType>(
  Object.entries(FRAME_TYPES).map(([name, code]) => [code, name as FrameType]),
);

/** The packet (unstuffed) of a frame. Throws a RangeError on a bad seq or an oversize payload. */
export function encodePacket(frame: Frame): Buffer {
  if (!Number.isInteger(frame.seq) || frame.seq < 0 || frame.seq > 0xff) {
    throw new RangeError(`seq must be an integer 0-255, got ${frame.seq}`);
  }
  if (frame.payload.length > ABSOLUTE_MAX_PAYLOAD) {
    throw new RangeError(
      `payload of ${frame.payload.length} bytes exceeds ${ABSOLUTE_MAX_PAYLOAD}`,
    );
  }
  if (frame.syn && frame.type !== 'DATA') throw new RangeError('only a DATA frame carries SYN');
  const packet = Buffer.alloc(MIN_PACKET_LENGTH + frame.payload.length);
  packet[0] = LINK_VERSION;
  packet[1] = FRAME_TYPES[frame.type] | (frame.syn ? FLAG_SYN : 0);
  packet[2] = frame.seq;
  packet.writeUInt16BE(frame.payload.length, 3);
  frame.payload.copy(packet, HEADER_LENGTH);
  const crcAt = HEADER_LENGTH + frame.payload.length;
  packet.writeUInt32BE(crc32(packet.subarray(0, crcAt)), crcAt);
  return packet;
}

/** Checks and parses one unstuffed packet; a bad one yields the reason it is dropped. */
export function decodePacket(packet: Buffer, maxPayload = DEFAULT_MAX_PAYLOAD): PacketResult {
  if (packet.length < MIN_PACKET_LENGTH) return { ok: false, reason: 'too-short' };
  const crcAt = packet.length - CRC_LENGTH;
  if (crc32(packet.subarray(0, crcAt)) !== packet.readUInt32BE(crcAt)) {
    return { ok: false, reason: 'bad-crc' };
  }
  if (packet[0] !== LINK_VERSION) return { ok: false, reason: 'bad-version' };
  const flagsType = packet[1] ?? 0;
  const type = TYPE_BY_CODE.get(flagsType & 0x0f);
  const flags = flagsType & 0xf0;
  if (!type || (flags & ~FLAG_SYN) !== 0 || (flags !== 0 && type !== 'DATA')) {
    return { ok: false, reason: 'bad-type' };
  }
  const length = packet.readUInt16BE(3);
  if (length > maxPayload) return { ok: false, reason: 'oversize' };
  if (length !== crcAt - HEADER_LENGTH) return { ok: false, reason: 'bad-length' };
  const frame: Frame = {
    type,
    seq: packet[2] ?? 0,
    payload: Buffer.from(packet.subarray(HEADER_LENGTH, crcAt)),
  };
  if (flags & FLAG_SYN) frame.syn = true;
  return { ok: true, frame };
}

/** Bytes on the wire for a packet after SLIP stuffing, with both END bytes. */
export function wireLength(packet: Buffer): number {
  let escaped = 0;
  for (const byte of packet) if (byte === SLIP.END || byte === SLIP.ESC) escaped++;
  return packet.length + escaped + 2;
}
