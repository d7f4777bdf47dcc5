/**
 * Reads an uploaded release archive as hostile input, before anything of it is stored
 * (docs/fleet.md, "Releases"): one pass over the gzip'd tar, nothing written to disk. Only
 * files and folders with release paths (no links, devices, absolute or `..` paths, no
 * duplicates), within size and count limits; then the manifest's signature against the
 * relay's release key, and every listed file's size and SHA-256, with nothing unlisted.
 */
import { createHash, type Hash } from 'node:crypto';
import fs from 'node:fs';
import { pipeline } from 'node:stream/promises';
import * as tar from 'tar';
import { verifyManifest } from '../../common/release-signature.js';
import {
  RELEASE_MANIFEST_FILE,
  RELEASE_SIGNATURE_FILE,
  ReleaseFilePath,
  ReleaseManifest,
} from '../../protocol/index.js';

export interface ReleaseArchiveLimits {
  /** The compressed archive (default 256 MiB). */
  maxArchiveBytes: number;
  /** Every file summed, as unpacked (default 512 MiB): a gzip bomb ends here. */
  maxUnpackedBytes: number;
}

export const DEFAULT_RELEASE_LIMITS: ReleaseArchiveLimits = {
  maxArchiveBytes: 256 * 1024 * 1024,
  maxUnpackedBytes: 512 * 1024 * 1024,
};

const MAX_ENTRIES = 20_000;
const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;

export type ReleaseArchiveProblem = 'RELEASE_INVALID' | 'RELEASE_SIGNATURE_INVALID';

export class ReleaseArchiveError extends Error {
  override readonly name = 'ReleaseArchiveError';
  constructor(
    readonly code: ReleaseArchiveProblem,
    message: string,
  ) {
    super(message);
  }
}

export interface CheckedRelease {
  manifest: ReleaseManifest;
  /** The manifest's exact bytes, as signed. */
  manifestBytes: Buffer;
  signature: string;
  archiveSha256: string;
  archiveSize: number;
}

const invalid = (message: string) => new ReleaseArchiveError('RELEASE_INVALID', message);

export async function checkReleaseArchive(
  file: string,
  publicKeyPem: string,
  limits: ReleaseArchiveLimits = DEFAULT_RELEASE_LIMITS,
): Promise<CheckedRelease> {
  const archiveSize = fs.statSync(file).size;
  if (archiveSize > limits.maxArchiveBytes) {
    throw invalid(`the archive is larger than ${limits.maxArchiveBytes} bytes`);
  }
  const files = new Map<string, { size: number; hash: Hash }>();
  const kept = new Map<string, Buffer[]>([
    [RELEASE_MANIFEST_FILE, []],
    [RELEASE_SIGNATURE_FILE, []],
  ]);
  let problem: string | undefined;
  let unpacked = 0;
  let entries = 0;
  const onReadEntry = (entry: tar.ReadEntry) => {
    entries += 1;
    const name = entry.path.replace(/^\.\//, '').replace(/\/$/, '');
    if (problem) return;
    if (entries > MAX_ENTRIES) {
      problem = `the archive has more than ${MAX_ENTRIES} entries`;
    } else if (entry.type === 'Directory') {
      if (name !== '' && !ReleaseFilePath.safeParse(name).success) {
        problem = `a folder has a path a release may not hold: ${JSON.stringify(name)}`;
      }
    } else if (entry.type !== 'File' && entry.type !== 'OldFile') {
      problem = `the archive holds a ${entry.type} entry (${JSON.stringify(name)}); only files and folders are allowed`;
    } else if (!ReleaseFilePath.safeParse(name).success) {
      problem = `a file has a path a release may not hold: ${JSON.stringify(name)}`;
    } else if (files.has(name)) {
      problem = `${name} is in the archive twice`;
    } else if ((unpacked += entry.size) > limits.maxUnpackedBytes) {
      problem = `the archive unpacks to more than ${limits.maxUnpackedBytes} bytes`;
    } else {
      const seen = { size: 0, hash: createHash('sha256') };
      files.set(name, seen);
      const keep = kept.get(name);
      entry.on('data', (chunk: Buffer) => {
        seen.size += chunk.length;
        seen.hash.update(chunk);
        if (keep && seen.size <= MAX_MANIFEST_BYTES) keep.push(chunk);
      });
    }
  };
  try {
    await tar.t({ file, strict: true, onReadEntry });
  } catch (error) {
    throw invalid(`the archive cannot be read as a gzip'd tar: ${(error as Error).message}`);
  }
  if (problem) throw invalid(problem);

  const whole = (name: string) => {
    const seen = files.get(name);
    if (!seen || seen.size > MAX_MANIFEST_BYTES) throw invalid(`the archive has no ${name}`);
    return Buffer.concat(kept.get(name)!);
  };
  const manifestBytes = whole(RELEASE_MANIFEST_FILE);
  const signature = whole(RELEASE_SIGNATURE_FILE).toString('utf8').trim();
  if (!verifyManifest(manifestBytes, signature, publicKeyPem)) {
    throw new ReleaseArchiveError(
      'RELEASE_SIGNATURE_INVALID',
      'the manifest signature does not verify with the relay’s release public key',
    );
  }
  let manifest: ReleaseManifest;
  try {
    manifest = ReleaseManifest.parse(JSON.parse(manifestBytes.toString('utf8')));
  } catch {
    throw invalid('the signed manifest.json is not a release manifest');
  }
  const listed = new Set(manifest.files.map((f) => f.path));
  for (const name of files.keys()) {
    if (name !== RELEASE_MANIFEST_FILE && name !== RELEASE_SIGNATURE_FILE && !listed.has(name)) {
      throw invalid(`${name} is in the archive but not in the manifest`);
    }
  }
  for (const listedFile of manifest.files) {
    const seen = files.get(listedFile.path);
    if (!seen) throw invalid(`${listedFile.path} is in the manifest but not in the archive`);
    if (seen.size !== listedFile.size || seen.hash.digest('hex') !== listedFile.sha256) {
      throw invalid(`${listedFile.path} does not match its hash in the manifest`);
    }
  }
  const whole256 = createHash('sha256');
  await pipeline(fs.createReadStream(file), whole256);
  const archiveSha256 = whole256.digest('hex');
  return { manifest, manifestBytes, signature, archiveSha256, archiveSize };
}
