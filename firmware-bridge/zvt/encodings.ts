/**
 * The field encodings of ZVT (zvt-notes §3.1): packed BCD, the LL/LLL lengths of variable
 * fields (`F1 F1` = 11), and text in code page 437, the protocol's default character set.
 *
 * BCD values are kept as nibble strings (`'000000001000'`, `'5413EEEEEE4111F'`), not
 * numbers: masked PANs (E), padding (F) and track separators (D) must survive a round trip.
 * `decimalFromBcd` turns a nibble string into a number where the field is a number.
 *
 * CP437 maps all 256 bytes to distinct characters, so bytes → text → bytes is exact; a
 * character outside the code page is written as `?`.
 */

/** Packed BCD to its nibbles, high nibble first, `0-9A-F`. */
export function nibblesOf(bytes: Uint8Array): string {
  return Buffer.from(bytes).toString('hex').toUpperCase();
}

/** Nibbles (`0-9A-F`, even count) to packed BCD; RangeError otherwise. */
export function bcdFromNibbles(nibbles: string): Buffer {
  if (!/^(?:[0-9A-Fa-f]{2})*$/.test(nibbles)) {
    throw new RangeError(`not an even number of BCD nibbles: ${JSON.stringify(nibbles)}`);
  }
  return Buffer.from(nibbles, 'hex');
}

/** The number a nibble string of decimal digits spells; undefined when it has A-F. */
export function decimalFromBcd(nibbles: string): number | undefined {
  if (!/^[0-9]+$/.test(nibbles)) return undefined;
  return Number(nibbles);
}

/** A non-negative integer as `bytes` bytes of BCD; RangeError when it does not fit. */
export function bcdFromDecimal(value: number, bytes: number): Buffer {
  const digits = String(value);
  if (!Number.isSafeInteger(value) || value < 0 || digits.length > bytes * 2) {
    throw new RangeError(`${value} does not fit in ${bytes} BCD bytes`);
  }
  return Buffer.from(digits.padStart(bytes * 2, '0'), 'hex');
}

/** Decimal digits as a zero-padded nibble string of `bytes` bytes. */
export function decimalNibbles(value: number, bytes: number): string {
  return nibblesOf(bcdFromDecimal(value, bytes));
}

/** The byte count an LL (2) or LLL (3) prefix spells; undefined when a byte is not `F0`-`F9`. */
export function readVarLength(bytes: Uint8Array): number | undefined {
  let length = 0;
  for (const byte of bytes) {
    if (byte < 0xf0 || byte > 0xf9) return undefined;
    length = length * 10 + (byte & 0x0f);
  }
  return length;
}

/** The LL or LLL prefix for `length` bytes; RangeError past 99 / 999. */
export function varLengthPrefix(length: number, digits: 2 | 3): Buffer {
  if (!Number.isInteger(length) || length < 0 || length >= 10 ** digits) {
    throw new RangeError(`${length} bytes do not fit an ${'L'.repeat(digits)} length`);
  }
  return Buffer.from(
    String(length)
      .padStart(digits, '0')
      .split('')
      .map((digit) => 0xf0 | Number(digit)),
  );
}

// ---- code page 437 ----

/** The upper half of CP437 (0x80-0xFF); the lower half is ASCII, control bytes included. */
const CP437_HIGH =
  'ÇüéâäàåçêëèïîìÄÅÉæÆôöòûùÿÖÜ¢£¥₧ƒáíóúñÑªº¿⌐¬½¼¡«»░▒▓│┤╡╢╖╕╣║╗╝╜╛┐' +
  '└┴┬├─┼╞╟╚╔╩╦╠═╬╧╨╤╥╙╘╒╓╫╪┘┌█▄▌▐▀αßΓπΣσµτΦΘΩδ∞φε∩≡±≥≤⌠⌡÷≈°∙·√ⁿ²■\u00a0';

const CP437: readonly string[] = [
  ...Array.from({ length: 128 }, (_, code) => String.fromCharCode(code)),
  ...CP437_HIGH,
];

const CP437_BYTES: ReadonlyMap<string, number> = new Map(CP437.map((char, byte) => [char, byte]));

/** The 256 characters of CP437 in byte order (for tests and property generators). */
export const CP437_CHARACTERS: readonly string[] = CP437;

export function decodeCp437(bytes: Uint8Array): string {
  let text = '';
  for (const byte of bytes) text += CP437[byte];
  return text;
}

/** Text to CP437; characters outside the code page become `?`. */
export function encodeCp437(text: string): Buffer {
  const out: number[] = [];
  for (const char of text) out.push(CP437_BYTES.get(char) ?? 0x3f);
  return Buffer.from(out);
}

/** Whether every character of `text` has a CP437 byte. */
export function isCp437(text: string): boolean {
  for (const char of text) if (!CP437_BYTES.has(char)) return false;
  return true;
}
