/**
 * A transaction's id derived from its pair (terminal_id, external_id), so that the relay
 * and a terminal's agent in local mode name a pair the same without asking each other
 * (docs/local-mode.md): `txn-` and 26 base32 characters (the alphabet of the relay's
 * time-ordered ids) of SHA-256 over terminal_id, NUL, external_id.
 */
import { createHash } from 'node:crypto';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const CHARACTERS = 26;

export function pairTransactionId(terminalId: string, externalId: string): string {
  const digest = createHash('sha256').update(`${terminalId}\u0000${externalId}`).digest();
  let bits = 0n;
  for (const byte of digest.subarray(0, 17)) bits = (bits << 8n) | BigInt(byte);
  // 17 bytes are 136 bits; the first 130 make the 26 characters.
  bits >>= 6n;
  let out = '';
  for (let i = 0; i < CHARACTERS; i++) {
    out = CROCKFORD[Number(bits & 31n)]! + out;
    bits >>= 5n;
  }
  return `txn-${out}`;
}
