import { scrypt } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { VerifiedSecretCache, hashGeneratedSecret, hashSecret, verifySecret } from './secrets.js';

describe('secrets', () => {
  it('stores a salted PBKDF2 hash, never the secret, and still verifies scrypt hashes', async () => {
    const a = await hashSecret('correct horse');
    const b = await hashSecret('correct horse');
    expect(a).toMatch(/^pbkdf2-sha256\$600000\$/);
    expect(a).not.toContain('correct horse');
    expect(a).not.toBe(b);
    expect(await verifySecret('correct horse', a)).toBe(true);
    expect(await verifySecret('correct horsE', a)).toBe(false);
    expect(await verifySecret('anything', 'plain-text')).toBe(false);
    // Made by the earlier scrypt scheme (N=16384, r=8, p=1).
    const legacy =
      'scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA==$' +
      (
        await new Promise<Buffer>((resolve, reject) =>
          scrypt('old secret', Buffer.alloc(16), 32, { N: 16384, r: 8, p: 1 }, (e, k) =>
            e ? reject(e) : resolve(k),
          ),
        )
      ).toString('base64');
    expect(await verifySecret('old secret', legacy)).toBe(true);
    expect(await verifySecret('new secret', legacy)).toBe(false);
  });

  it('hashes generated secrets with salted SHA-256, verified alike', async () => {
    const hash = hashGeneratedSecret('f7Jx2-generated-secret');
    expect(hash).toMatch(/^sha256\$/);
    expect(hash).not.toContain('f7Jx2');
    expect(hashGeneratedSecret('f7Jx2-generated-secret')).not.toBe(hash);
    expect(await verifySecret('f7Jx2-generated-secret', hash)).toBe(true);
    expect(await verifySecret('f7Jx2-generated-secreT', hash)).toBe(false);
    expect(await verifySecret('x', 'sha256$')).toBe(false);
  });

  it('remembers a verified secret only for the hash it was verified against', async () => {
    const cache = new VerifiedSecretCache();
    const hash = await hashSecret('s1');
    expect(await cache.verify('u', 's1', hash)).toBe(true);
    expect(await cache.verify('u', 's2', hash)).toBe(false);
    const rotated = await hashSecret('s2');
    expect(await cache.verify('u', 's1', rotated)).toBe(false);
    expect(await cache.verify('u', 's2', rotated)).toBe(true);
  });

  it('a burst of requests with one new secret agrees', async () => {
    const cache = new VerifiedSecretCache();
    const hash = await hashSecret('burst');
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => cache.verify('u', i % 2 ? 'burst' : 'wrong', hash)),
    );
    expect(answers).toEqual(Array.from({ length: 20 }, (_, i) => i % 2 === 1));
  });
});
