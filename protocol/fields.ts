/**
 * Field types shared by every contract, exactly as the spec's "Shared field types" table.
 */
import { z } from 'zod';

export const Currency = z.string().regex(/^[A-Z]{3}$/, 'must be 3 uppercase letters A-Z');
export const ExternalId = z
  .string()
  .min(1)
  .max(63)
  .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces');
export const TerminalId = z
  .string()
  .min(1)
  .max(63)
  .regex(/^[0-9a-zA-Z-]+$/, 'must contain only 0-9, a-z, A-Z and hyphen');
export const TransactionId = TerminalId;
export const Amount = z.number().int().min(0).max(999_999_999_999);
/** The spec sets no limit; the service keeps at most this much metadata per transaction. */
export const METADATA_MAX_BYTES = 16_384;
/** Nesting deeper than this is refused: no POS needs it, and it costs stack everywhere. */
export const METADATA_MAX_DEPTH = 32;

function depthOf(value: unknown, limit: number): number {
  if (value === null || typeof value !== 'object') return 0;
  if (limit <= 0) return 1;
  let deepest = 0;
  for (const member of Object.values(value)) {
    deepest = Math.max(deepest, depthOf(member, limit - 1));
    if (deepest >= limit) break;
  }
  return deepest + 1;
}

/** Size as JSON; a value too deep to measure counts as too large. */
export function metadataBytes(metadata: unknown): number {
  if (depthOf(metadata, METADATA_MAX_DEPTH + 1) > METADATA_MAX_DEPTH) return Infinity;
  return Buffer.byteLength(JSON.stringify(metadata) ?? '', 'utf8');
}
export const Metadata = z
  .record(z.string(), z.unknown())
  .refine((m) => depthOf(m, METADATA_MAX_DEPTH + 1) <= METADATA_MAX_DEPTH, {
    message: `must nest at most ${METADATA_MAX_DEPTH} levels deep`,
    abort: true,
  })
  .refine((m) => metadataBytes(m) <= METADATA_MAX_BYTES, {
    message: `must be at most ${METADATA_MAX_BYTES} bytes as JSON`,
  });
export const WaitSeconds = z.number().min(0).max(180);
export const ResultCode = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[0-9A-Z_]+$/, 'must contain only 0-9, A-Z and underscore');
export const Description = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[\x20-\x7e]+$/, 'must be printable ASCII');
export const PrintableAscii = (max: number) =>
  z
    .string()
    .min(1)
    .max(max)
    .regex(/^[\x20-\x7e]+$/, 'must be printable ASCII');

/** Current revision: `YYYY-MM-DDTHH:MM:SS.mmmZ`. */
export const TimestampV1 = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/, 'must be YYYY-MM-DDTHH:MM:SS.mmmZ');
/** Older revision: `YYYY-MM-DDTHH:MM:SSZ`. */
export const TimestampV0 = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/, 'must be YYYY-MM-DDTHH:MM:SSZ');

export const REVISIONS = ['v0', 'v1'] as const;
export type Revision = (typeof REVISIONS)[number];

export const timestampOf = (revision: Revision) => (revision === 'v0' ? TimestampV0 : TimestampV1);

/** Renders an internal millisecond timestamp in the shape a revision uses. */
export function formatTimestamp(iso: string, revision: Revision): string {
  return revision === 'v0' ? `${iso.slice(0, 19)}Z` : iso;
}

/**
 * Receipt text: 1-1023 characters, 1-31 lines of 0-32 printable ASCII characters, each
 * terminated by a newline.
 */
export const ReceiptText = z
  .string()
  .min(1)
  .max(1023)
  .regex(/^(?:[\x20-\x7e]{0,32}\n){1,31}$/, 'must be 1-31 lines of at most 32 characters');
