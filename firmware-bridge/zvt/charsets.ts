/**
 * The character sets of ZVT text (zvt-notes §3.1): CP437 by default, or what a TLV 14
 * announces (`FF` CP437, `FE` UTF-8, `01`-`10` ISO 8859-1…16). Terminals differ: most send
 * CP437, some (CardComplete) ISO 8859 without announcing it, so the driver's profile names
 * the one to assume and an announcement, where one appears, wins.
 */
import { z } from 'zod';
import { decodeCp437 } from './encodings.js';
import { isConstructed, type Tlv } from './tlv.js';

/** Character sets a profile may assume for text nobody announced. */
export const ZvtCharset = z.enum(['cp437', 'iso-8859-1', 'iso-8859-2', 'iso-8859-15', 'utf-8']);
export type ZvtCharset = z.infer<typeof ZvtCharset>;

/** A TLV 14 value as the label TextDecoder knows; undefined for one it cannot decode. */
export function charsetOfCode(code: number | undefined): string | undefined {
  if (code === 0xff) return 'cp437';
  if (code === 0xfe) return 'utf-8';
  if (code === 0x01) return 'iso-8859-1';
  if (code === undefined || code < 0x02 || code > 0x10) return undefined;
  const label = `iso-8859-${code}`;
  try {
    new TextDecoder(label);
    return label;
  } catch {
    return undefined;
  }
}

/**
 * The character set a TLV container announces for its texts: a primitive 14 among its
 * items (a 06 D3 carries it beside 25, a 04 FF beside 24). A 14 inside 27 lists what a PT
 * supports and announces nothing.
 */
export function announcedCharset(items: readonly Tlv[]): string | undefined {
  for (const item of items) {
    if (!isConstructed(item)) {
      if (item.tag === 0x14) return charsetOfCode(item.value[0]);
    } else if (item.tag !== 0x27) {
      const inner = announcedCharset(item.items);
      if (inner) return inner;
    }
  }
  return undefined;
}

/** ZVT text bytes as text in `charset` (a ZvtCharset or a label from charsetOfCode). */
export function decodeZvtText(bytes: Uint8Array, charset: string): string {
  if (charset === 'cp437') return decodeCp437(bytes);
  // WHATWG's "iso-8859-1" is windows-1252; ZVT's is the real Latin-1.
  if (charset === 'iso-8859-1') return Buffer.from(bytes).toString('latin1');
  return new TextDecoder(charset).decode(bytes);
}
