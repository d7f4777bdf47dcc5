/** The checker's threads: a verdict per archive, a bounded number at once. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generateReleaseKeyPair } from '../../common/release-signature.js';
import { DEFAULT_RELEASE_LIMITS } from './archive.js';
import { ReleaseArchiveChecker } from './archive-checker.js';

const { publicKeyPem } = generateReleaseKeyPair();
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-archive-checker-'));
const checker = new ReleaseArchiveChecker(1);
afterAll(() => checker.close());

describe('release archive checker', () => {
  it('answers a refusal from its thread, and refuses a second check while one runs', async () => {
    const junk = path.join(dir, 'junk.tar.gz');
    fs.writeFileSync(junk, 'not an archive');
    const request = { file: junk, publicKeyPem, limits: DEFAULT_RELEASE_LIMITS };
    const first = checker.check(request);
    await expect(checker.check(request)).rejects.toMatchObject({
      code: 'SERVICE_BUSY',
      status: 503,
      headers: { 'Retry-After': '5' },
    });
    await expect(first).rejects.toMatchObject({
      name: 'ReleaseArchiveError',
      code: 'RELEASE_INVALID',
    });
    // The thread is free again, and kept.
    await expect(checker.check(request)).rejects.toMatchObject({ code: 'RELEASE_INVALID' });
  });

  it('ends a thread that passes the deadline, refusing its archive, and starts another', async () => {
    const faults: Error[] = [];
    const hasty = new ReleaseArchiveChecker(1, (error) => faults.push(error), 1);
    try {
      const junk = path.join(dir, 'junk.tar.gz');
      fs.writeFileSync(junk, 'not an archive');
      const request = { file: junk, publicKeyPem, limits: DEFAULT_RELEASE_LIMITS };
      await expect(hasty.check(request)).rejects.toThrow(/could not be checked within/);
      expect(faults.map((f) => f.message)).toEqual(['the release check took more than 1 ms']);
      await expect(hasty.check(request)).rejects.toMatchObject({ code: 'RELEASE_INVALID' });
    } finally {
      await hasty.close();
    }
  });
});
