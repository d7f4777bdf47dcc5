/** Pairing codes and secrets: drawn from the system's CSPRNG, compared by hash. */
import { createHash, randomInt } from 'node:crypto';
import { PAIRING_CODE_ALPHABET, PAIRING_CODE_LENGTH } from '../../protocol/index.js';

/** 8 characters of 32: 2^40 codes, each character drawn uniformly (randomInt is unbiased). */
export function newPairingCode(): string {
  let code = '';
  for (let i = 0; i < PAIRING_CODE_LENGTH; i++) {
    code += PAIRING_CODE_ALPHABET[randomInt(PAIRING_CODE_ALPHABET.length)];
  }
  return code;
}

/** The form the store keeps of the agent's pairing secret. */
export const pairingSecretHash = (secret: string): string =>
  createHash('sha256').update(secret, 'utf8').digest('hex');
