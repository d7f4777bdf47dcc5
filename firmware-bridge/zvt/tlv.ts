/**
 * The TLV container of BMP 06 (zvt-notes §4), BER style:
 *
 * ```
 *   tag     1-4 bytes: first & 0x1F == 0x1F means more follow, each with bit 8 set but the last
 *   length  00-7F | 81 nn | 82 hh ll (big-endian)
 *   value   bytes, or nested TLVs when the first tag byte has 0x20 (constructed) set
 * ```
 *
 * Tags are numbers of their bytes (`0x1F07`, `0x1F8001`). A constructed object whose value
 * does not parse as TLVs is kept as a primitive with its raw bytes: Feig marks `FFxx` tags
 * constructed and fills them with plain data (§4), and a liberal reader keeps going. A
 * length written in more bytes than needed is remembered (`lengthBytes`) so that every
 * decoded container encodes back to the same bytes.
 */
import { decoded, failure, shifted, type Decoded } from './errors.js';

export interface TlvPrimitive {
  tag: number;
  value: Buffer;
  /** Bytes of the length field, only when more than the minimal form. */
  lengthBytes?: 2 | 3;
}

export interface TlvConstructed {
  tag: number;
  items: Tlv[];
  lengthBytes?: 2 | 3;
}

export type Tlv = TlvPrimitive | TlvConstructed;

/** Nesting past this depth is kept as raw bytes, so hostile input cannot exhaust the stack. */
export const MAX_TLV_DEPTH = 8;

export const isConstructed = (tlv: Tlv): tlv is TlvConstructed => 'items' in tlv;

/** A BER length: its value and how many bytes it took. */
export function readBerLength(
  bytes: Uint8Array,
  at: number,
): Decoded<{ length: number; size: 1 | 2 | 3 }> {
  const first = bytes[at];
  if (first === undefined) return failure('truncated', 'a BER length is missing', at);
  if (first < 0x80) return decoded({ length: first, size: 1 });
  if (first === 0x81 || first === 0x82) {
    const size = first === 0x81 ? 2 : 3;
    if (at + size > bytes.length) return failure('truncated', 'a BER long length is cut', at);
    const length =
      size === 2
        ? (bytes[at + 1] as number)
        : ((bytes[at + 1] as number) << 8) | (bytes[at + 2] as number);
    return decoded({ length, size });
  }
  return failure(
    'bad-ber-length',
    `BER length byte ${first.toString(16)} is not 00-7F, 81, 82`,
    at,
  );
}

/** The BER length field for `length`, in `size` bytes when given (never fewer than needed). */
export function berLength(length: number, size?: 2 | 3): Buffer {
  if (!Number.isInteger(length) || length < 0 || length > 0xffff) {
    throw new RangeError(`TLV length ${length} is not 0-65535`);
  }
  const needed = length < 0x80 ? 1 : length <= 0xff ? 2 : 3;
  const bytes = Math.max(needed, size ?? 1);
  if (bytes === 1) return Buffer.from([length]);
  if (bytes === 2) return Buffer.from([0x81, length]);
  return Buffer.from([0x82, length >> 8, length & 0xff]);
}

/** The `lengthBytes` to keep for a length read in `size` bytes (undefined when minimal). */
function nonMinimal(length: number, size: 1 | 2 | 3): 2 | 3 | undefined {
  const needed = length < 0x80 ? 1 : length <= 0xff ? 2 : 3;
  return size > needed ? (size as 2 | 3) : undefined;
}

function readTag(bytes: Uint8Array, at: number): Decoded<{ tag: number; size: number }> {
  const first = bytes[at];
  if (first === undefined) return failure('truncated', 'a TLV tag is missing', at);
  let tag = first;
  let size = 1;
  if ((first & 0x1f) === 0x1f) {
    for (;;) {
      const next = bytes[at + size];
      if (next === undefined) return failure('truncated', 'a multi-byte TLV tag is cut', at);
      tag = tag * 256 + next;
      size++;
      if ((next & 0x80) === 0) break;
      if (size === 4) return failure('bad-tlv-tag', 'a TLV tag longer than 4 bytes', at);
    }
  }
  return decoded({ tag, size });
}

/** The bytes of a tag number; RangeError for a number that is no valid tag. */
export function tagBytes(tag: number): Buffer {
  if (!Number.isInteger(tag) || tag < 0 || tag > 0xffffffff) {
    throw new RangeError(`TLV tag ${tag} is not 1-4 bytes`);
  }
  const bytes: number[] = [];
  for (let rest = tag; ; rest = Math.floor(rest / 256)) {
    bytes.unshift(rest % 256);
    if (rest < 256) break;
  }
  const valid =
    bytes.length === 1
      ? ((bytes[0] as number) & 0x1f) !== 0x1f
      : ((bytes[0] as number) & 0x1f) === 0x1f &&
        bytes.slice(1, -1).every((byte) => (byte & 0x80) !== 0) &&
        ((bytes[bytes.length - 1] as number) & 0x80) === 0;
  if (!valid) throw new RangeError(`0x${tag.toString(16)} is not a valid TLV tag`);
  return Buffer.from(bytes);
}

/** Whether the first tag byte marks a constructed object. */
export function isConstructedTag(tag: number): boolean {
  let first = tag;
  while (first > 0xff) first = Math.floor(first / 256);
  return (first & 0x20) !== 0;
}

/** A sequence of TLV objects filling `bytes` exactly; never throws. */
export function decodeTlvs(bytes: Uint8Array, depth = 0): Decoded<Tlv[]> {
  const items: Tlv[] = [];
  let at = 0;
  while (at < bytes.length) {
    const tag = readTag(bytes, at);
    if (!tag.ok) return tag;
    const length = readBerLength(bytes, at + tag.value.size);
    if (!length.ok) return length;
    const start = at + tag.value.size + length.value.size;
    const end = start + length.value.length;
    if (end > bytes.length) {
      return failure('truncated', `TLV ${tag.value.tag.toString(16)} runs past its container`, at);
    }
    const value = bytes.subarray(start, end);
    const lengthBytes = nonMinimal(length.value.length, length.value.size);
    const item: Tlv = decodeValue(tag.value.tag, value, depth);
    if (lengthBytes) item.lengthBytes = lengthBytes;
    items.push(item);
    at = end;
  }
  return decoded(items);
}

function decodeValue(tag: number, value: Uint8Array, depth: number): Tlv {
  if (isConstructedTag(tag) && depth < MAX_TLV_DEPTH) {
    const nested = decodeTlvs(value, depth + 1);
    if (nested.ok) return { tag, items: nested.value };
  }
  return { tag, value: Buffer.from(value) };
}

export function encodeTlvs(items: readonly Tlv[]): Buffer {
  return Buffer.concat(items.map(encodeTlv));
}

export function encodeTlv(item: Tlv): Buffer {
  const value = isConstructed(item) ? encodeTlvs(item.items) : item.value;
  return Buffer.concat([tagBytes(item.tag), berLength(value.length, item.lengthBytes), value]);
}

/** The BMP 06 container: its BER length, then TLVs. */
export interface TlvContainer {
  items: Tlv[];
  lengthBytes?: 2 | 3;
}

/** The container's length and TLVs at `at` (just after the 06 tag): the container and its size. */
export function decodeContainer(
  bytes: Uint8Array,
  at: number,
): Decoded<{ container: TlvContainer; size: number }> {
  const length = readBerLength(bytes, at);
  if (!length.ok) return length;
  const start = at + length.value.size;
  const end = start + length.value.length;
  if (end > bytes.length) {
    return failure('truncated', 'the TLV container runs past the APDU', at);
  }
  const items = decodeTlvs(bytes.subarray(start, end));
  if (!items.ok) return shifted(items, start);
  const container: TlvContainer = { items: items.value };
  const lengthBytes = nonMinimal(length.value.length, length.value.size);
  if (lengthBytes) container.lengthBytes = lengthBytes;
  return decoded({ container, size: end - at });
}

/** Length and TLVs of a BMP 06 (without the 06 tag). */
export function encodeContainer(container: TlvContainer): Buffer {
  const body = encodeTlvs(container.items);
  return Buffer.concat([berLength(body.length, container.lengthBytes), body]);
}

// ---- lookups and builders ----

/** The first object with `tag`, searched depth first through constructed objects. */
export function findTlv(items: readonly Tlv[], tag: number): Tlv | undefined {
  for (const item of items) {
    if (item.tag === tag) return item;
    if (isConstructed(item)) {
      const found = findTlv(item.items, tag);
      if (found) return found;
    }
  }
  return undefined;
}

/** Every primitive value with `tag`, depth first (e.g. all `07` text lines). */
export function findAllValues(items: readonly Tlv[], tag: number): Buffer[] {
  const out: Buffer[] = [];
  for (const item of items) {
    if (isConstructed(item)) out.push(...findAllValues(item.items, tag));
    else if (item.tag === tag) out.push(item.value);
  }
  return out;
}

export const primitive = (tag: number, value: Uint8Array): TlvPrimitive => ({
  tag,
  value: Buffer.from(value),
});

export const constructed = (tag: number, items: Tlv[]): TlvConstructed => ({ tag, items });
