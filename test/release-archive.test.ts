/** The relay's check of an uploaded release archive, fed hostile archives. */
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import * as tar from 'tar';
import { beforeAll, describe, expect, it } from 'vitest';
import { generateReleaseKeyPair } from '../common/release-signature.js';
import { TAR_OVERHEAD_BYTES, checkReleaseArchive } from '../cloud/releases/archive.js';
import { tempDir } from './agent-harness.js';
import { ARCH, buildRelease } from './support/agent-releases.js';
import { releaseBomb } from './support/release-bomb.js';

const keys = generateReleaseKeyPair();

describe('release archive check', () => {
  let dir: string;
  let good: string;

  beforeAll(async () => {
    dir = tempDir('release-archive');
    good = await buildRelease(dir, { version: '2.0.0', privateKeyPem: keys.privateKeyPem });
  });

  /** The good release's files, unpacked, changed by `change`, packed again. */
  async function repacked(name: string, change: (folder: string) => void, extra: object = {}) {
    const folder = path.join(dir, name);
    fs.mkdirSync(folder);
    await tar.x({ file: good, cwd: folder });
    change(folder);
    const file = path.join(dir, `${name}.tar.gz`);
    const entries = fs.readdirSync(folder);
    await tar.c({ gzip: true, file, cwd: folder, ...extra }, entries);
    return file;
  }

  it('reads the manifest of a good release, with the archive’s own hash and size', async () => {
    const checked = await checkReleaseArchive(good, keys.publicKeyPem);
    expect(checked.manifest).toMatchObject({ name: 'tps-agent', version: '2.0.0', arch: ARCH });
    expect(checked.archiveSize).toBe(fs.statSync(good).size);
    expect(checked.archiveSha256).toMatch(/^[0-9a-f]{64}$/);
  });

  it('refuses a signature of another key', async () => {
    await expect(
      checkReleaseArchive(good, generateReleaseKeyPair().publicKeyPem),
    ).rejects.toMatchObject({ code: 'RELEASE_SIGNATURE_INVALID' });
  });

  it.each<[string, (folder: string) => void, RegExp]>([
    [
      'a file changed after signing',
      (f) => fs.appendFileSync(path.join(f, 'bin/tps-agent.js'), '//'),
      /bin\/tps-agent.js does not match its hash/,
    ],
    [
      'a file the manifest does not list',
      (f) => fs.writeFileSync(path.join(f, 'bin/extra.js'), 'x'),
      /bin\/extra.js is in the archive but not in the manifest/,
    ],
    [
      'a listed file missing',
      (f) => fs.rmSync(path.join(f, 'package.json')),
      /package.json is in the manifest but not in the archive/,
    ],
    [
      'a symbolic link',
      (f) => fs.symlinkSync('/etc/passwd', path.join(f, 'bin/link')),
      /SymbolicLink entry/,
    ],
    ['no signature', (f) => fs.rmSync(path.join(f, 'manifest.sig')), /no manifest.sig/],
  ])('refuses an archive with %s', async (name, change, reason) => {
    const file = await repacked(name.replace(/\W+/g, '-'), change);
    const refused = checkReleaseArchive(file, keys.publicKeyPem);
    await expect(refused).rejects.toMatchObject({ code: 'RELEASE_INVALID' });
    await expect(refused).rejects.toThrow(reason);
  });

  it('refuses a path out of the release and an archive over its limits', async () => {
    const outside = path.join(dir, 'outside');
    fs.mkdirSync(path.join(outside, 'inner'), { recursive: true });
    fs.writeFileSync(path.join(outside, 'evil'), 'x');
    const file = path.join(dir, 'outside.tar.gz');
    await tar.c({ gzip: true, file, cwd: path.join(outside, 'inner'), preservePaths: true }, [
      '../evil',
    ]);
    await expect(checkReleaseArchive(file, keys.publicKeyPem)).rejects.toThrow(
      /a path a release may not hold/,
    );
    await expect(
      checkReleaseArchive(good, keys.publicKeyPem, { maxArchiveBytes: 100, maxUnpackedBytes: 1e9 }),
    ).rejects.toThrow(/larger than 100 bytes/);
    await expect(
      checkReleaseArchive(good, keys.publicKeyPem, { maxArchiveBytes: 1e9, maxUnpackedBytes: 100 }),
    ).rejects.toThrow(/unpacks to more than 100 bytes/);
    fs.writeFileSync(path.join(dir, 'not.tar.gz'), 'not an archive');
    await expect(
      checkReleaseArchive(path.join(dir, 'not.tar.gz'), keys.publicKeyPem),
    ).rejects.toMatchObject({ code: 'RELEASE_INVALID' });
  });

  it('stops at the first entry that breaks a limit: a 2 MiB gzip declaring 8 GiB is not inflated on', async () => {
    const file = path.join(dir, 'bomb.tar.gz');
    fs.writeFileSync(file, releaseBomb({ declaredBytes: 8 * 1024 ** 3, zeroBytes: 2 * 1024 ** 3 }));
    expect(fs.statSync(file).size).toBeLessThan(3 * 1024 * 1024);
    // Inflating on would have ended in tar's own ratio guard, seconds later.
    await expect(checkReleaseArchive(file, keys.publicKeyPem)).rejects.toThrow(
      /unpacks to more than 536870912 bytes/,
    );
  });

  it('bounds the inflated stream itself: zeros after the tar’s end do not inflate without end', async () => {
    const limits = { maxArchiveBytes: 1e9, maxUnpackedBytes: 1024 * 1024 };
    expect((await checkReleaseArchive(good, keys.publicKeyPem, limits)).manifest.version).toBe(
      '2.0.0',
    );
    const padded = (zeros: number) =>
      Buffer.concat([fs.readFileSync(good), zlib.gzipSync(Buffer.alloc(zeros))]);
    const file = path.join(dir, 'padded.tar.gz');
    fs.writeFileSync(file, padded(64 * 1024));
    expect((await checkReleaseArchive(file, keys.publicKeyPem, limits)).manifest.version).toBe(
      '2.0.0',
    );
    fs.writeFileSync(file, padded(TAR_OVERHEAD_BYTES + 2 * limits.maxUnpackedBytes));
    await expect(checkReleaseArchive(file, keys.publicKeyPem, limits)).rejects.toThrow(
      /inflates to more than/,
    );
  });

  it('refuses data after the tar’s end', async () => {
    const file = path.join(dir, 'trailing.tar.gz');
    const text = Buffer.from('not padding '.repeat(100_000));
    fs.writeFileSync(file, Buffer.concat([fs.readFileSync(good), zlib.gzipSync(text)]));
    await expect(checkReleaseArchive(file, keys.publicKeyPem)).rejects.toThrow(
      /data after the end of its tar/,
    );
  });

  it('refuses data after the tar’s end even where it shares a chunk with the end, and a tar cut before its end', async () => {
    // Found by the fuzz suite: 18 bytes of text right after the end's zero blocks were kept
    // by tar's parser with the end, unseen.
    const tarOf = zlib.gunzipSync(fs.readFileSync(good));
    const file = path.join(dir, 'close-behind.tar.gz');
    fs.writeFileSync(file, zlib.gzipSync(Buffer.concat([tarOf, Buffer.from('x'.repeat(18))])));
    await expect(checkReleaseArchive(file, keys.publicKeyPem)).rejects.toThrow(
      /data after the end of its tar/,
    );
    // The same tar without its zero padding: its last entry then ends the file.
    let end = tarOf.length;
    while (end > 0 && tarOf.subarray(end - 512, end).every((byte) => byte === 0)) end -= 512;
    fs.writeFileSync(file, zlib.gzipSync(tarOf.subarray(0, end)));
    await expect(checkReleaseArchive(file, keys.publicKeyPem)).rejects.toThrow(/has no end/);
  });

  it('refuses a gzip inside the gzip, which tar would inflate a second time', async () => {
    const file = path.join(dir, 'nested.tar.gz');
    fs.writeFileSync(file, zlib.gzipSync(fs.readFileSync(good)));
    await expect(checkReleaseArchive(file, keys.publicKeyPem)).rejects.toThrow(
      /another compressed stream/,
    );
  });
});
