/**
 * Release archives, bent: a signed release's entries mixed with hostile ones (paths that
 * climb out, are absolute or empty, links, devices, FIFOs, duplicates, sizes declared
 * larger or smaller than the data, up to terabytes, through ustar or pax headers), the
 * tar's end left out, the gzip's bytes changed, cut short or followed by more. The check
 * accepts the release or refuses it with its own error, in bounded time and memory, and
 * never accepts an entry a release may not hold; over HTTP, never a 5xx, nothing logged
 * as an error, nothing left in the release folder.
 */
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import fc from 'fast-check';
import * as tar from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReleaseArchiveError, checkReleaseArchive } from '../cloud/releases/archive.js';
import { generateReleaseKeyPair } from '../common/release-signature.js';
import { ReleaseFilePath } from '../protocol/index.js';
import { tempDir } from './agent-harness.js';
import { buildRelease } from './support/agent-releases.js';
import { errorRecordingLogger, fuzzParameters } from './support/fuzz.js';
import { basicAuth, startTestRelay, type TestRelay } from './support/relay.js';

const keys = generateReleaseKeyPair();
const MiB = 1024 * 1024;

interface Entry {
  path: string;
  type: tar.types.EntryTypeName;
  /** The size its header declares. */
  declared: number;
  /** The bytes that follow it (zeros past `data`). */
  body: number;
  data?: Buffer;
  pax: boolean;
}

type GzipBend =
  | { kind: 'none' }
  | { kind: 'bytes'; at: number[]; values: number[] }
  | { kind: 'cut'; at: number }
  | { kind: 'append'; zeros: number; text: boolean };

const hostilePath = fc.oneof(
  fc.constantFrom(
    '../evil',
    '../../etc/cron.d/x',
    '/etc/passwd',
    '/',
    'bin/../../x',
    'bin/./tps-agent.js',
    './',
    '.',
    '..',
    '',
    'bin//x',
    'bin\\..\\x',
    'C:\\Windows\\x',
    'x\u0000y',
    'manifest.json',
    'bin/tps-agent.js',
    'node_modules/x/../../../x',
    'a'.repeat(300),
    `${'d/'.repeat(120)}f`,
  ),
  fc.stringMatching(/^[a-z./\\-]{1,40}$/),
);

const hostileType = fc.constantFrom<tar.types.EntryTypeName>(
  'File',
  'File',
  'Directory',
  'SymbolicLink',
  'Link',
  'CharacterDevice',
  'BlockDevice',
  'FIFO',
  'ContiguousFile',
);

const declaredSize = fc.oneof(
  fc.integer({ min: 0, max: 4096 }),
  fc.constantFrom(0o77777777777, 8 * 1024 ** 3, 2 ** 40, Number.MAX_SAFE_INTEGER),
);

const hostileEntry: fc.Arbitrary<Entry> = fc.record({
  path: hostilePath,
  type: hostileType,
  declared: declaredSize,
  body: fc.oneof(fc.integer({ min: 0, max: 4096 }), fc.constant(-1)),
  pax: fc.boolean(),
});

const gzipBend: fc.Arbitrary<GzipBend> = fc.oneof(
  { weight: 3, arbitrary: fc.constant({ kind: 'none' as const }) },
  fc.record({
    kind: fc.constant('bytes' as const),
    at: fc.array(fc.nat(), { minLength: 1, maxLength: 6 }),
    values: fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 6, maxLength: 6 }),
  }),
  fc.record({ kind: fc.constant('cut' as const), at: fc.nat() }),
  fc.record({
    kind: fc.constant('append' as const),
    zeros: fc.integer({ min: 0, max: 2 * MiB }),
    text: fc.boolean(),
  }),
);

/** A case: the release's entries with hostile ones spliced in, then the gzip bent. */
const archiveCase = fc.record({
  hostile: fc.array(fc.tuple(fc.nat(), hostileEntry), { maxLength: 4 }),
  dropEnd: fc.boolean(),
  level: fc.integer({ min: 0, max: 9 }),
  bend: gzipBend,
});
type ArchiveCase = typeof archiveCase extends fc.Arbitrary<infer T> ? T : never;

function encodeEntry(entry: Entry): Buffer {
  const header = Buffer.alloc(512);
  new tar.Header({
    path: entry.path,
    size: entry.declared,
    type: entry.type,
    mode: 0o644,
    mtime: new Date(0),
    ...(entry.type === 'SymbolicLink' || entry.type === 'Link' ? { linkpath: '/etc/passwd' } : {}),
  }).encode(header, 0);
  const pax = entry.pax
    ? new tar.Pax({ path: entry.path, size: entry.declared, mtime: new Date(0) }).encode()
    : Buffer.alloc(0);
  const length = entry.body < 0 ? entry.declared : entry.body;
  const body = Buffer.alloc(Math.ceil(Math.min(length, 64 * 1024) / 512) * 512);
  entry.data?.copy(body);
  return Buffer.concat([pax, header, body]);
}

function archiveOf(release: Entry[], c: ArchiveCase): Buffer {
  const entries = [...release];
  for (const [at, entry] of c.hostile) entries.splice(at % (entries.length + 1), 0, entry);
  const tarBytes = Buffer.concat([
    ...entries.map(encodeEntry),
    c.dropEnd ? Buffer.alloc(0) : Buffer.alloc(1024),
  ]);
  const gzip = zlib.gzipSync(tarBytes, { level: c.level });
  const bend = c.bend;
  switch (bend.kind) {
    case 'none':
      return gzip;
    case 'bytes': {
      const copy = Buffer.from(gzip);
      bend.at.forEach((at, i) => (copy[at % copy.length] = bend.values[i]!));
      return copy;
    }
    case 'cut':
      return gzip.subarray(0, bend.at % gzip.length);
    case 'append': {
      const more = bend.text ? Buffer.from('x'.repeat(bend.zeros)) : Buffer.alloc(bend.zeros);
      return Buffer.concat([gzip, zlib.gzipSync(more)]);
    }
  }
}

/**
 * Whether the check may accept this case: nothing but zeros after the tar's end, and only
 * folders a release may hold were added.
 */
const mayBeAccepted = (c: ArchiveCase) =>
  !(c.bend.kind === 'append' && c.bend.text && c.bend.zeros > 0) &&
  c.hostile.every(
    ([, e]) =>
      e.type === 'Directory' &&
      (e.path.replace(/^\.\//, '').replace(/\/$/, '') === '' ||
        ReleaseFilePath.safeParse(e.path.replace(/^\.\//, '').replace(/\/$/, '')).success),
  );

let dir: string;
let release: Entry[];

beforeAll(async () => {
  dir = tempDir('release-fuzz');
  const good = await buildRelease(dir, { version: '7.0.0', privateKeyPem: keys.privateKeyPem });
  const unpacked = path.join(dir, 'unpacked');
  fs.mkdirSync(unpacked);
  await tar.x({ file: good, cwd: unpacked });
  release = ['manifest.json', 'manifest.sig', 'package.json', 'bin/tps-agent.js'].map((name) => {
    const data = fs.readFileSync(path.join(unpacked, name));
    return { path: name, type: 'File', declared: data.length, body: data.length, data, pax: false };
  });
});

/** Rejects when `promise` takes longer than `ms`: a stall is a failure, not a wait. */
const within = <T>(promise: Promise<T>, ms: number) =>
  Promise.race([
    promise,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms).unref(),
    ),
  ]);

describe('release archives, bent', () => {
  it('are accepted whole or refused with a release error, in bounded time and memory', async () => {
    const limits = { maxArchiveBytes: 16 * MiB, maxUnpackedBytes: MiB };
    const file = path.join(dir, 'case.tar.gz');
    const rssAtStart = process.memoryUsage().rss;
    let rssPeak = rssAtStart;
    const sampler = setInterval(
      () => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)),
      20,
    ).unref();
    let accepted = 0;
    await fc.assert(
      fc.asyncProperty(archiveCase, async (c) => {
        fs.writeFileSync(file, archiveOf(release, c));
        const outcome = await within(
          checkReleaseArchive(file, keys.publicKeyPem, limits).then(
            (checked) => ({ checked }),
            (error: unknown) => ({ error }),
          ),
          20_000,
        );
        if ('error' in outcome) {
          expect(outcome.error).toBeInstanceOf(ReleaseArchiveError);
          return;
        }
        accepted++;
        expect(mayBeAccepted(c), JSON.stringify(c.hostile)).toBe(true);
        expect(outcome.checked.manifest.version).toBe('7.0.0');
      }),
      fuzzParameters(60),
    );
    clearInterval(sampler);
    expect(accepted).toBeGreaterThan(0);
    expect(rssPeak - rssAtStart).toBeLessThan(512 * MiB);
  });
});

describe('release uploads, bent, over HTTP', () => {
  let relay: TestRelay;
  const { logger, errors } = errorRecordingLogger();

  beforeAll(async () => {
    const keyFile = path.join(dir, 'release-key.pem');
    fs.writeFileSync(keyFile, keys.publicKeyPem);
    relay = await startTestRelay({ releasePublicKey: keyFile }, undefined, { logger });
  });
  afterAll(async () => {
    await relay?.close();
  });

  it('are answered 200 or a catalogued 4xx, log no error and leave no upload behind', async () => {
    const releases = () => path.join(relay.dataDir, 'releases');
    await fc.assert(
      fc.asyncProperty(archiveCase, async (c) => {
        const response = await within(
          fetch(`${relay.baseUrl}/v1/fleet/releases`, {
            method: 'POST',
            headers: {
              authorization: basicAuth(relay.operator),
              'content-type': 'application/gzip',
            },
            body: archiveOf(release, c),
          }),
          30_000,
        );
        const body = (await response.json()) as { error?: { code?: string } };
        expect(response.status, JSON.stringify(body)).toBeLessThan(500);
        if (response.status !== 200) {
          expect(body.error?.code).toMatch(
            /^(RELEASE_INVALID|RELEASE_SIGNATURE_INVALID|RELEASE_EXISTS)$/,
          );
        } else {
          expect(mayBeAccepted(c)).toBe(true);
        }
        expect(
          fs.readdirSync(releases()).filter((f) => !/^[0-9a-f]{64}\.tar\.gz$/.test(f)),
        ).toEqual([]);
        expect(errors).toEqual([]);
      }),
      fuzzParameters(15),
    );
    // The one release, whatever bytes it came in, is kept once per distinct archive.
    expect(fs.readdirSync(releases()).length).toBeLessThanOrEqual(2);
  });
});
