/**
 * The keys a terminal may have certified: SubjectPublicKeyInfo in PEM, EC P-256 or RSA of
 * 2048 to 4096 bits. Anything else (a private key, a certificate, a weak or exotic key)
 * is refused before it reaches the certificate builder.
 */
import { createPublicKey, type KeyObject } from 'node:crypto';

const SPKI_PEM = /^-----BEGIN PUBLIC KEY-----\n[A-Za-z0-9+/=\n]+-----END PUBLIC KEY-----\n?$/;

type CheckedKey = { der: Buffer; type: 'ec' | 'rsa' };

/** The key's DER and type, or why it is refused. */
export function checkPublicKey(pem: string): CheckedKey | { refused: string } {
  if (!SPKI_PEM.test(pem)) return { refused: 'public_key: not a PEM SubjectPublicKeyInfo' };
  let key: KeyObject;
  try {
    key = createPublicKey({ key: pem, format: 'pem' });
  } catch {
    return { refused: 'public_key: not a readable public key' };
  }
  const details = key.asymmetricKeyDetails ?? {};
  const der = key.export({ type: 'spki', format: 'der' });
  if (key.asymmetricKeyType === 'ec' && details.namedCurve === 'prime256v1') {
    return { der, type: 'ec' };
  }
  const bits = details.modulusLength ?? 0;
  if (key.asymmetricKeyType === 'rsa' && bits >= 2048 && bits <= 4096) return { der, type: 'rsa' };
  return { refused: 'public_key: must be EC P-256 or RSA of 2048 to 4096 bits' };
}
