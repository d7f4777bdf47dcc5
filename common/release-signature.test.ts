import { describe, expect, it } from 'vitest';
import { generateReleaseKeyPair, signManifest, verifyManifest } from './release-signature.js';

describe('release manifest signature', () => {
  const keys = generateReleaseKeyPair();
  const manifest = Buffer.from('{"name":"tps-agent","version":"1.0.0"}');
  const signature = signManifest(manifest, keys.privateKeyPem);

  it('verifies the bytes it signed with the matching public key', () => {
    expect(verifyManifest(manifest, signature, keys.publicKeyPem)).toBe(true);
  });

  it('refuses a changed byte, another key and a malformed signature', () => {
    const changed = Buffer.from(manifest);
    changed.writeUInt8(changed.readUInt8(changed.length - 3) ^ 1, changed.length - 3);
    expect(verifyManifest(changed, signature, keys.publicKeyPem)).toBe(false);
    expect(verifyManifest(manifest, signature, generateReleaseKeyPair().publicKeyPem)).toBe(false);
    expect(verifyManifest(manifest, 'bm90IGEgc2lnbmF0dXJl', keys.publicKeyPem)).toBe(false);
  });
});
