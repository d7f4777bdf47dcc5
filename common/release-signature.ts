/**
 * ed25519 over a release manifest's exact bytes (docs/fleet.md, "Releases"). Keys travel
 * as PEM (SPKI public, PKCS#8 private); the signature as base64 in `manifest.sig`.
 */
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify } from 'node:crypto';

export interface ReleaseKeyPair {
  publicKeyPem: string;
  privateKeyPem: string;
}

export function generateReleaseKeyPair(): ReleaseKeyPair {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return {
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
  };
}

export function signManifest(manifestBytes: Buffer, privateKeyPem: string): string {
  return sign(null, manifestBytes, createPrivateKey(privateKeyPem)).toString('base64');
}

/** False for a wrong key, a changed byte or a signature that is not base64 of 64 bytes. */
export function verifyManifest(
  manifestBytes: Buffer,
  signatureBase64: string,
  publicKeyPem: string,
): boolean {
  const signature = Buffer.from(signatureBase64.trim(), 'base64');
  if (signature.length !== 64) return false;
  const key = createPublicKey(publicKeyPem);
  if (key.asymmetricKeyType !== 'ed25519') return false;
  return verify(null, manifestBytes, key, signature);
}
