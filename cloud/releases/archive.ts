/**
 * Reads an uploaded release archive as hostile input, before anything of it is stored
 * (docs/fleet.md, "Releases"): one streaming pass over the gzip'd tar, nothing written to
 * disk, stopped at the first problem. Only files and folders with release paths (no
 * links, devices, absolute or `..` paths, no duplicates), within size and count limits,
 * the inflated stream itself bounded as it is read (a gzip bomb ends there, whatever its
 * headers declare); then the manifest's signature against the relay's release key, and
 * every listed file's size and SHA-256, with nothing unlisted. It runs on a thread of its
 * own (archive-checker.ts): inflating holds that thread, never the relay's event loop.
 */
import { createHash, type Hash } from 'node:crypto';
import fs from 'node:fs';
import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
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
  /** Every file summed, as unpacked (default 512 MiB). */
  maxUnpackedBytes: number;
}

export const DEFAULT_RELEASE_LIMITS: ReleaseArchiveLimits = {
  maxArchiveBytes: 256 * 1024 * 1024,
  maxUnpackedBytes: 512 * 1024 * 1024,
};

const MAX_ENTRIES = 20_000;
const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;
/** A long path's pax header is the largest meta entry a release needs; 64 KiB is plenty. */
const MAX_META_ENTRY_BYTES = 64 * 1024;
/**
 * What the inflated tar may hold besides its files' bytes: a header, a pax header and
 * padding for each of at most MAX_ENTRIES entries, and the end blocks.
 */
export const TAR_OVERHEAD_BYTES = 64 * 1024 * 1024;

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

/** Hashes and counts what passes through. */
class Tap extends Transform {
  bytes = 0;
  constructor(readonly hash: Hash) {
    super();
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    this.hash.update(chunk);
    done(null, chunk);
  }
}

/**
 * Passes the inflated tar on until it exceeds `maxBytes` (then fails at once, so the
 * inflater stops); refuses a compressed stream inside the gzip, which tar's parser would
 * otherwise inflate a second time, past this bound.
 */
class InflatedBound extends Transform {
  private bytes = 0;
  private head: Buffer | undefined = Buffer.alloc(0);
  constructor(private readonly maxBytes: number) {
    super();
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) {
      done(invalid(`the archive inflates to more than ${this.maxBytes} bytes`));
      return;
    }
    if (this.head) {
      this.head = Buffer.concat([this.head, chunk]);
      if (this.head.length >= 4) {
        if (isCompressed(this.head)) {
          done(invalid('the gzip holds another compressed stream, not a tar'));
          return;
        }
        this.head = undefined;
      }
    }
    done(null, chunk);
  }
}

const GZIP_MAGIC = Buffer.from([0x1f, 0x8b]);
const ZSTD_MAGIC = Buffer.from([0x28, 0xb5, 0x2f, 0xfd]);
const isCompressed = (head: Buffer) =>
  head.subarray(0, 2).equals(GZIP_MAGIC) || head.subarray(0, 4).equals(ZSTD_MAGIC);

export async function checkReleaseArchive(
  file: string,
  publicKeyPem: string,
  limits: ReleaseArchiveLimits = DEFAULT_RELEASE_LIMITS,
): Promise<CheckedRelease> {
  const archiveSize = (await fs.promises.stat(file)).size;
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
  const whyRefused = (entry: tar.ReadEntry, name: string): string | undefined => {
    entries += 1;
    if (entries > MAX_ENTRIES) return `the archive has more than ${MAX_ENTRIES} entries`;
    if (entry.type === 'Directory') {
      return name !== '' && !ReleaseFilePath.safeParse(name).success
        ? `a folder has a path a release may not hold: ${JSON.stringify(name)}`
        : undefined;
    }
    if (entry.type !== 'File' && entry.type !== 'OldFile') {
      return `the archive holds a ${entry.type} entry (${JSON.stringify(name)}); only files and folders are allowed`;
    }
    if (!ReleaseFilePath.safeParse(name).success) {
      return `a file has a path a release may not hold: ${JSON.stringify(name)}`;
    }
    if (files.has(name)) return `${name} is in the archive twice`;
    if ((unpacked += entry.size) > limits.maxUnpackedBytes) {
      return `the archive unpacks to more than ${limits.maxUnpackedBytes} bytes`;
    }
    return undefined;
  };
  const parser = new tar.Parser({
    strict: true,
    maxMetaEntrySize: MAX_META_ENTRY_BYTES,
    onReadEntry: (entry) => {
      const name = entry.path.replace(/^\.\//, '').replace(/\/$/, '');
      problem ??= whyRefused(entry, name);
      if (problem || entry.type === 'Directory') {
        entry.resume();
        return;
      }
      const seen = { size: 0, hash: createHash('sha256') };
      files.set(name, seen);
      const keep = kept.get(name);
      entry.on('data', (chunk: Buffer) => {
        seen.size += chunk.length;
        seen.hash.update(chunk);
        if (keep && seen.size <= MAX_MANIFEST_BYTES) keep.push(chunk);
      });
    },
  });
  const archiveTap = new Tap(createHash('sha256'));
  try {
    await pipeline(
      fs.createReadStream(file),
      archiveTap,
      zlib.createGunzip(),
      new InflatedBound(limits.maxUnpackedBytes + TAR_OVERHEAD_BYTES),
      (tarStream: AsyncIterable<Buffer>) => parse(tarStream, parser, () => problem),
    );
  } catch (error) {
    if (error instanceof ReleaseArchiveError) throw error;
    throw invalid(`the archive cannot be read as a gzip'd tar: ${(error as Error).message}`);
  }
  if (problem) throw invalid(problem);
  if (archiveTap.bytes !== archiveSize) throw invalid('the archive has bytes after its gzip');

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
  const archiveSha256 = archiveTap.hash.digest('hex');
  return { manifest, manifestBytes, signature, archiveSha256, archiveSize };
}

/**
 * Feeds the inflated tar to tar's parser, waiting when it asks to; throws as soon as an
 * entry is refused or the parser fails, which ends the pipeline and the inflating. After
 * the tar's end only its zero padding may follow, and it is not fed on: tar's parser
 * would gather it into one buffer, copied whole at every chunk.
 *
 * Where the end lies inside a chunk, the parser keeps what follows to itself. So the tar is
 * fed in whole blocks, at once up to a chunk's first zero block (only zero blocks can end
 * a tar), one at a time from there: the parser says "eof" as it reads the second zero
 * block, and what follows it in the chunk is checked like the rest.
 */
async function parse(
  tarStream: AsyncIterable<Buffer>,
  parser: tar.Parser,
  problem: () => string | undefined,
): Promise<void> {
  let failure: Error | undefined;
  let wake: () => void = () => {};
  const woken = () => {
    const waiting = wake;
    wake = () => {};
    waiting();
  };
  parser.on('error', (error: Error) => {
    failure ??= error;
    woken();
  });
  parser.on('drain', woken);
  let sawTarEnd = false;
  parser.on('eof', () => (sawTarEnd = true));
  let ended = false;
  parser.on('end', () => {
    ended = true;
    woken();
  });
  const check = () => {
    const refused = problem();
    if (refused) throw invalid(refused);
    if (failure) throw failure;
  };
  const feed = async (piece: Buffer) => {
    const flowing = parser.write(piece);
    check();
    if (!flowing) {
      await new Promise<void>((resolve) => (wake = resolve));
      check();
    }
  };
  const afterEnd = (rest: Buffer) => {
    if (!isZeros(rest)) throw invalid('the archive has data after the end of its tar');
  };
  /** Bytes of a block begun in the previous chunk: chunks are fed from block boundaries. */
  let carried = Buffer.alloc(0);
  for await (const chunk of tarStream) {
    if (sawTarEnd) {
      afterEnd(chunk);
      continue;
    }
    const joined = carried.length > 0 ? Buffer.concat([carried, chunk]) : chunk;
    const whole = joined.length - (joined.length % BLOCK);
    carried = Buffer.from(joined.subarray(whole));
    const blocks = joined.subarray(0, whole);
    const zero = firstZeroBlock(blocks);
    if (zero < 0) {
      if (blocks.length > 0) await feed(blocks);
      continue;
    }
    if (zero > 0) await feed(blocks.subarray(0, zero));
    for (let at = zero; at < blocks.length; at += BLOCK) {
      await feed(blocks.subarray(at, at + BLOCK));
      if (sawTarEnd) {
        afterEnd(blocks.subarray(at + BLOCK));
        afterEnd(carried);
        break;
      }
    }
  }
  // A tar ends with two zero blocks, whatever it holds; one without them was cut short, or
  // something follows its last entry that the parser would take for a torn block.
  if (!sawTarEnd) throw invalid('the archive’s tar has no end (two zero blocks)');
  parser.end();
  check();
  if (!ended) await new Promise<void>((resolve) => (wake = resolve));
  check();
}

const BLOCK = 512;
const ZERO_BLOCK = Buffer.alloc(BLOCK);
/** Where the first all-zero block of `blocks` starts, or -1. */
function firstZeroBlock(blocks: Buffer): number {
  for (let at = 0; at < blocks.length; at += BLOCK) {
    if (blocks[at] === 0 && blocks.subarray(at, at + BLOCK).equals(ZERO_BLOCK)) return at;
  }
  return -1;
}

const ZEROS = Buffer.alloc(64 * 1024);
function isZeros(chunk: Buffer): boolean {
  for (let at = 0; at < chunk.length; at += ZEROS.length) {
    const part = chunk.subarray(at, at + ZEROS.length);
    if (!part.equals(ZEROS.subarray(0, part.length))) return false;
  }
  return true;
}
