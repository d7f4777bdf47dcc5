import { execFileSync } from 'node:child_process';
import { pbkdf2Sync, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  emqxUserRecord,
  hashForBroker,
  isBrokerHash,
  verifyAgentSecret,
  verifyBrokerHash,
} from './mosquitto-hash.js';
import { VerifiedSecretCache, hashGeneratedSecret } from './secrets.js';

/** Written by `mosquitto_passwd -c -b FILE alice s3cret` (Mosquitto 2.0.11). */
const MOSQUITTO_PASSWD_LINE =
  'alice:$7$101$7edH9xyTK9EtJY5K$EdxEXuZ4h6uwzDmd3MABQR9R+3rPHuvwKjjg4BuOkM5lssnk8SqemceeV4QyvFqigpuwW8vxoLdZSKWtEucyJw==';

const MOSQUITTO_PASSWD = ['/usr/bin/mosquitto_passwd', '/usr/local/bin/mosquitto_passwd'].find(
  (p) => fs.existsSync(p),
);

const newSecret = () => randomBytes(24).toString('base64url');

describe('broker hashes (Mosquitto $7$)', () => {
  it('verifies a hash mosquitto_passwd made, and refuses any other secret', () => {
    const hash = MOSQUITTO_PASSWD_LINE.slice('alice:'.length);
    expect(isBrokerHash(hash)).toBe(true);
    expect(verifyBrokerHash('s3cret', hash)).toBe(true);
    expect(verifyBrokerHash('s3creT', hash)).toBe(false);
    expect(verifyBrokerHash('', hash)).toBe(false);
  });

  it.skipIf(!MOSQUITTO_PASSWD)(
    'verifies hashes the installed mosquitto_passwd makes for generated secrets',
    () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-mosquitto-hash-'));
      try {
        const file = path.join(dir, 'passwd');
        for (let i = 0; i < 3; i++) {
          const secret = newSecret();
          execFileSync(MOSQUITTO_PASSWD!, ['-c', '-b', file, 't-2000000001', secret]);
          const [user, hash] = fs.readFileSync(file, 'utf8').trim().split(/:(.*)/s);
          expect(user).toBe('t-2000000001');
          expect(verifyBrokerHash(secret, hash!)).toBe(true);
          expect(verifyBrokerHash(newSecret(), hash!)).toBe(false);
        }
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  );

  it('makes hashes in mosquitto_passwd’s own format: 101 iterations, 12-byte salt, 64-byte hash', () => {
    const secret = newSecret();
    const a = hashForBroker(secret);
    const b = hashForBroker(secret);
    expect(a).toMatch(/^\$7\$101\$[A-Za-z0-9+/]{16}\$[A-Za-z0-9+/]{86}==$/);
    expect(a).not.toBe(b);
    expect(a).not.toContain(secret);
    const [, , iterations, salt, hash] = a.split('$');
    const saltBytes = Buffer.from(salt!, 'base64');
    expect(saltBytes.toString('ascii')).toMatch(/^[A-Za-z0-9]{12}$/);
    // PBKDF2-HMAC-SHA512 over the secret's bytes, as Mosquitto computes it.
    expect(pbkdf2Sync(secret, saltBytes, Number(iterations), 64, 'sha512').toString('base64')).toBe(
      hash,
    );
    expect(verifyBrokerHash(secret, a)).toBe(true);
    expect(verifyBrokerHash(newSecret(), a)).toBe(false);
  });

  it('refuses malformed hashes rather than throwing', () => {
    const good = hashForBroker('x');
    for (const bad of [
      '',
      '$7$',
      '$7$101$$',
      good.replace('$7$', '$6$'),
      good.replace('$101$', '$0$'),
      // An 11-byte salt: Mosquitto refuses it, and so do we.
      `$7$101$${Buffer.alloc(11).toString('base64')}$${good.split('$')[4]}`,
      good.slice(0, -4),
    ]) {
      expect(isBrokerHash(bad)).toBe(false);
      expect(verifyBrokerHash('x', bad)).toBe(false);
    }
  });

  it('agent secrets verify against $7$ hashes and against the salted SHA-256 ones stored before', async () => {
    const secret = newSecret();
    const older = hashGeneratedSecret(secret);
    const current = hashForBroker(secret);
    expect(await verifyAgentSecret(secret, current)).toBe(true);
    expect(await verifyAgentSecret(secret, older)).toBe(true);
    expect(await verifyAgentSecret(newSecret(), current)).toBe(false);
    expect(await verifyAgentSecret(newSecret(), older)).toBe(false);
    expect(await verifyAgentSecret(secret, '$7$101$broken')).toBe(false);

    const cache = new VerifiedSecretCache(verifyAgentSecret);
    expect(await cache.verify('t-1', secret, current)).toBe(true);
    expect(await cache.verify('t-1', 'wrong', current)).toBe(false);
    expect(await cache.verify('t-2', secret, older)).toBe(true);
  });

  it('converts to an EMQX built-in database record that EMQX’s pbkdf2 check accepts', () => {
    const secret = newSecret();
    const record = emqxUserRecord('t-2000000001', hashForBroker(secret));
    expect(record).toMatchObject({ user_id: 't-2000000001', is_superuser: false });
    // emqx_passwd: hex(pbkdf2(sha512, Password, Salt, 101, 64)), Salt being the string's bytes.
    const emqxCheck = (password: string) =>
      pbkdf2Sync(password, Buffer.from(record!.salt, 'utf8'), 101, 64, 'sha512').toString('hex');
    expect(emqxCheck(secret)).toBe(record!.password_hash);
    expect(emqxCheck(newSecret())).not.toBe(record!.password_hash);
    // mosquitto_passwd's salts are random bytes, which an EMQX import cannot carry.
    expect(emqxUserRecord('alice', MOSQUITTO_PASSWD_LINE.slice('alice:'.length))).toBeUndefined();
    expect(emqxUserRecord('t-1', hashGeneratedSecret(secret))).toBeUndefined();
  });
});
