/**
 * The CRC of ZVT serial frames (zvt-notes §2.1): CRC-16/KERMIT — polynomial 0x1021 used
 * bit-reversed (0x8408), init 0, reflected, no final xor; check value 0x2189 for
 * "123456789". It covers the unstuffed APDU followed by ETX (0x03) and is sent low byte
 * first, unstuffed.
 */

const TABLE = Uint16Array.from({ length: 256 }, (_, byte) => {
  let crc = byte;
  for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0x8408 : crc >>> 1;
  return crc;
});

export function crc16Kermit(bytes: Uint8Array, crc = 0): number {
  for (const byte of bytes) crc = (crc >>> 8) ^ (TABLE[(crc ^ byte) & 0xff] as number);
  return crc;
}

/** The CRC of a frame: over the APDU and the ETX byte. */
export function frameCrc(apdu: Uint8Array): number {
  return crc16Kermit(Buffer.from([0x03]), crc16Kermit(apdu));
}
