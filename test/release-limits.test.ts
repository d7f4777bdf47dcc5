/**
 * Release uploads an attacker with the operator's credential shapes, over real HTTP: gzip
 * bombs are refused while the relay keeps answering others (the check runs on a thread of
 * its own), refused uploads leave nothing in the release folder, and the uploads at once
 * and the folder's size are bounded.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { generateReleaseKeyPair } from '../common/release-signature.js';
import { tempDir } from './agent-harness.js';
import { expectError } from './support/api.js';
import { errorRecordingLogger } from './support/fuzz.js';
import { ARCH, buildRelease } from './support/agent-releases.js';
import { releaseBomb } from './support/release-bomb.js';
import { basicAuth, posFor, startTestRelay, type TestRelay } from './support/relay.js';

const keys = generateReleaseKeyPair();
const MiB = 1024 * 1024;
/** How long to poll for what a loaded machine may take seconds to do. */
const SLOW = { timeout: 15_000 };

let dir: string;
let keyFile: string;
beforeAll(() => {
  dir = tempDir('release-limits');
  keyFile = path.join(dir, 'release-key.pem');
  fs.writeFileSync(keyFile, keys.publicKeyPem);
});

async function publish(relay: TestRelay, body: Buffer | ReadableStream<Uint8Array>) {
  const response = await fetch(`${relay.baseUrl}/v1/fleet/releases`, {
    method: 'POST',
    headers: { authorization: basicAuth(relay.operator), 'content-type': 'application/gzip' },
    body,
    ...(body instanceof ReadableStream ? { duplex: 'half' } : {}),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, body: JSON.parse(text) };
}

/** The release folder's files and sizes. */
const folder = (relay: TestRelay) => {
  const releases = path.join(relay.dataDir, 'releases');
  if (!fs.existsSync(releases)) return {};
  return Object.fromEntries(
    fs.readdirSync(releases).map((name) => [name, fs.statSync(path.join(releases, name)).size]),
  );
};

describe('release uploads on a relay with the default limits', () => {
  let relay: TestRelay;
  let pos: ReturnType<typeof posFor>;

  beforeAll(async () => {
    relay = await startTestRelay({ releasePublicKey: keyFile });
    pos = posFor(relay, await relay.newSimulator());
  });
  afterAll(async () => {
    await relay?.close();
  });

  it('refuses a 2 MiB gzip whose first entry declares 8 GiB at that entry, 400 RELEASE_INVALID', async () => {
    const bomb = releaseBomb({ declaredBytes: 8 * 1024 ** 3, zeroBytes: 2 * 1024 ** 3 });
    expect(bomb.length).toBeLessThan(3 * MiB);
    const [refused, status] = await Promise.all([
      publish(relay, bomb),
      pos.call('/terminal/status', {}),
    ]);
    expectError(refused, 400, 'RELEASE_INVALID');
    expect(refused.body.error.description).toContain('unpacks to more than 536870912 bytes');
    expect(status.status).toBe(200);
    expect(Object.keys(folder(relay))).toEqual([]);
  });

  it('checks a bomb within the limits off the event loop: a payment and status reads are answered while it inflates', async () => {
    // 256 MiB of zeros under one entry: within the limits, so inflated and hashed whole.
    const bomb = releaseBomb({ declaredBytes: 256 * MiB, zeroBytes: 256 * MiB });
    expect(bomb.length).toBeLessThan(MiB);
    const started = Date.now();
    let bombAnsweredAfter: number | undefined;
    const refused = publish(relay, bomb).finally(() => (bombAnsweredAfter = Date.now() - started));
    // A POS starts a payment meanwhile: the relay takes it (committed, sent to the terminal)
    // and answers before the check ends.
    const paid = pos
      .call('/transaction/purchase', {
        external_id: 'during-bomb',
        requested_amount: 1000,
        currency: 'EUR',
        options: { wait_seconds: 0 },
      })
      .then((answer) => ({ answer, bombStillChecked: bombAnsweredAfter === undefined }));
    const statusLatencies: number[] = [];
    while (bombAnsweredAfter === undefined) {
      const sent = Date.now();
      const status = await pos.call('/terminal/status', {});
      expect(status.status).toBe(200);
      if (bombAnsweredAfter === undefined) statusLatencies.push(Date.now() - sent);
    }
    const answer = await refused;
    const payment = await paid;
    expect(payment.answer.status).toBe(200);
    expect(payment.bombStillChecked).toBe(true);
    // And the terminal pays it.
    const settled = await pos.call('/transaction/get', {
      external_id: 'during-bomb',
      options: { wait_seconds: 30 },
    });
    expect(settled.body.transaction).toMatchObject({
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
    });
    // On the event loop, one read would have waited for the whole check.
    expect(statusLatencies.length).toBeGreaterThanOrEqual(3);
    expect(Math.max(...statusLatencies)).toBeLessThan(bombAnsweredAfter! / 2);
    expectError(answer, 400, 'RELEASE_INVALID');
    expect(answer.body.error.description).toContain('no manifest.json');
  }, 60_000);

  it('leaves the release folder as it was after refused re-publishes of the same version', async () => {
    const archive = fs.readFileSync(
      await buildRelease(dir, { version: '5.1.0', privateKeyPem: keys.privateKeyPem }),
    );
    expect((await publish(relay, archive)).status).toBe(200);
    const before = folder(relay);
    expect(Object.keys(before)).toHaveLength(1);
    for (let i = 1; i <= 3; i++) {
      // Another gzip header (its time stamp): new bytes, the same release.
      const again = Buffer.from(archive);
      again.writeUInt32LE(i, 4);
      expect(zlib.gunzipSync(again).equals(zlib.gunzipSync(archive))).toBe(true);
      expectError(await publish(relay, again), 409, 'RELEASE_EXISTS');
    }
    expect(folder(relay)).toEqual(before);

    // A relay that died between the row and the file: the same bytes again put it back.
    const kept = path.join(relay.dataDir, 'releases', Object.keys(before)[0]!);
    fs.rmSync(kept);
    const download = () =>
      fetch(`${relay.baseUrl}/v1/fleet/releases/5.1.0/${ARCH}/archive`, {
        headers: { authorization: basicAuth(relay.operator) },
      });
    expect((await download()).status).toBe(404);
    expectError(await publish(relay, archive), 409, 'RELEASE_EXISTS');
    expect(folder(relay)).toEqual(before);
    expect(Buffer.from(await (await download()).arrayBuffer()).equals(archive)).toBe(true);
  });
});

describe('release uploads beyond the bounds of the uploads at once and of the folder', () => {
  let relay: TestRelay;
  const { logger, errors } = errorRecordingLogger();

  beforeAll(async () => {
    relay = await startTestRelay(
      { releasePublicKey: keyFile, releaseMaxUploads: 1, releaseMaxDiskBytes: MiB },
      undefined,
      { logger },
    );
  });
  afterAll(async () => {
    await relay?.close();
  });

  it('refuses an upload beyond the uploads at once, 503 SERVICE_BUSY, and takes the next once one ends', async () => {
    let finish!: () => void;
    const held = new Promise<void>((resolve) => (finish = resolve));
    const slow = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(new Uint8Array(1024));
        await held;
        controller.close();
      },
    });
    const first = publish(relay, slow);
    // Whatever fails below, the held upload ends, or it would hold the one place.
    onTestFinished(finish);
    // Signing in (PBKDF2) comes first: on a loaded machine it takes a while.
    await expect
      .poll(() => Object.keys(folder(relay)).filter((f) => f.startsWith('upload-')).length, SLOW)
      .toBe(1);
    const archive = fs.readFileSync(
      await buildRelease(dir, { version: '6.1.0', privateKeyPem: keys.privateKeyPem }),
    );
    const busy = await publish(relay, archive);
    expectError(busy, 503, 'SERVICE_BUSY');
    expect(busy.headers.get('retry-after')).toBe('5');
    finish();
    expectError(await first, 400, 'RELEASE_INVALID');
    expect((await publish(relay, archive)).status).toBe(200);
    expect(Object.keys(folder(relay)).filter((f) => f.startsWith('upload-'))).toEqual([]);
  });

  it('refuses an upload that would pass the folder’s bound, 413 RELEASE_STORAGE_FULL, keeping nothing of it', async () => {
    const before = folder(relay);
    const refused = await publish(relay, Buffer.alloc(3 * MiB, 7));
    expectError(refused, 413, 'RELEASE_STORAGE_FULL');
    expect(refused.body.error.description).toContain('TPS_RELEASE_MAX_DISK_BYTES');
    expect(folder(relay)).toEqual(before);

    // What the folder holds counts: a small release no longer fits once it is nearly full.
    const filler = path.join(relay.dataDir, 'releases', 'filler.bin');
    fs.writeFileSync(filler, Buffer.alloc(MiB - 512));
    const archive = fs.readFileSync(
      await buildRelease(dir, { version: '6.2.0', privateKeyPem: keys.privateKeyPem }),
    );
    expectError(await publish(relay, archive), 413, 'RELEASE_STORAGE_FULL');
    fs.rmSync(filler);
    expect((await publish(relay, archive)).status).toBe(200);
  });

  it('drops an upload its client abandons: its place and its file, with no error logged', async () => {
    const url = new URL(`${relay.baseUrl}/v1/fleet/releases`);
    const request = http.request({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      method: 'POST',
      headers: {
        authorization: basicAuth(relay.operator),
        'content-type': 'application/gzip',
        'content-length': String(MiB / 2),
      },
    });
    request.on('error', () => {});
    request.write(Buffer.alloc(64 * 1024));
    const uploads = () => Object.keys(folder(relay)).filter((f) => f.startsWith('upload-'));
    await expect.poll(uploads, SLOW).toHaveLength(1);
    request.destroy();
    await expect.poll(uploads, SLOW).toEqual([]);
    const archive = fs.readFileSync(
      await buildRelease(dir, { version: '6.3.0', privateKeyPem: keys.privateKeyPem }),
    );
    expect((await publish(relay, archive)).status).toBe(200);
    expect(errors).toEqual([]);
  });
});
