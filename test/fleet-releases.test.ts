/**
 * Releases on a real relay over HTTP: published by the operator as the archive itself,
 * checked against the relay's release key before anything is kept, served to terminals'
 * agents (and the operator) alone.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import { promisify } from 'node:util';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateReleaseKeyPair } from '../common/release-signature.js';
import { releaseArchivePath } from '../protocol/index.js';
import { tempDir } from './agent-harness.js';
import { ARCH, buildRelease } from './support/agent-releases.js';
import { post, startTestRelay, type TestRelay } from './support/relay.js';
import { tpsArgv } from './support/tps-command.js';

const keys = generateReleaseKeyPair();
const basic = (c: { username: string; password: string }) =>
  `Basic ${Buffer.from(`${c.username}:${c.password}`).toString('base64')}`;

describe('releases on the relay', () => {
  let relay: TestRelay;
  let dir: string;
  let agent: { username: string; password: string };
  let pos: { username: string; password: string };

  beforeAll(async () => {
    dir = tempDir('fleet-releases');
    const keyFile = path.join(dir, 'release-key.pem');
    fs.writeFileSync(keyFile, keys.publicKeyPem);
    relay = await startTestRelay({ releasePublicKey: keyFile });
    const created = await post(relay.baseUrl, 'v1', '/terminal/create', {}, relay.account);
    const body = created.body as {
      username: string;
      password: string;
      agent: { username: string; password: string };
    };
    agent = body.agent;
    pos = { username: body.username, password: body.password };
  });

  afterAll(async () => {
    await relay?.close();
  });

  const publish = async (file: string, credential = relay.operator) => {
    const response = await fetch(`${relay.baseUrl}/v1/fleet/releases`, {
      method: 'POST',
      headers: { authorization: basic(credential), 'content-type': 'application/gzip' },
      body: fs.readFileSync(file),
    });
    return { status: response.status, body: (await response.json()) as unknown };
  };
  const download = (version: string, credential: { username: string; password: string }) =>
    fetch(`${relay.baseUrl}${releaseArchivePath(version, ARCH)}`, {
      headers: { authorization: basic(credential) },
    });

  it('publishes a signed release once, and its terminal’s agent downloads it byte for byte', async () => {
    const archive = await buildRelease(dir, {
      version: '3.1.0',
      privateKeyPem: keys.privateKeyPem,
    });
    const published = await publish(archive);
    expect(published).toMatchObject({
      status: 200,
      body: {
        release: {
          version: '3.1.0',
          arch: ARCH,
          files: 2,
          archive_size: fs.statSync(archive).size,
        },
      },
    });
    expect(await publish(archive)).toMatchObject({
      status: 409,
      body: { error: { code: 'RELEASE_EXISTS' } },
    });
    const response = await download('3.1.0', agent);
    expect(response.status).toBe(200);
    expect(Buffer.from(await response.arrayBuffer()).equals(fs.readFileSync(archive))).toBe(true);
  });

  it('refuses a release signed with another key, and one that is no archive, keeping nothing', async () => {
    const foreign = await buildRelease(dir, {
      version: '3.2.0',
      privateKeyPem: generateReleaseKeyPair().privateKeyPem,
    });
    expect(await publish(foreign)).toMatchObject({
      status: 400,
      body: { error: { code: 'RELEASE_SIGNATURE_INVALID' } },
    });
    const junk = path.join(dir, 'junk.tar.gz');
    fs.writeFileSync(junk, 'not an archive at all');
    expect(await publish(junk)).toMatchObject({
      status: 400,
      body: { error: { code: 'RELEASE_INVALID' } },
    });
    // A real release is megabytes: the API's 512 KiB body limit does not apply here.
    const large = path.join(dir, 'large.tar.gz');
    fs.writeFileSync(large, Buffer.alloc(3 * 1024 * 1024, 7));
    expect(await publish(large)).toMatchObject({
      status: 400,
      body: { error: { code: 'RELEASE_INVALID' } },
    });
    expect((await download('3.2.0', agent)).status).toBe(404);
    const kept = fs.readdirSync(path.join(relay.dataDir, 'releases'));
    expect(kept.filter((f) => f.startsWith('upload-'))).toEqual([]);
  });

  it('only the operator publishes; a wrong or missing credential downloads nothing', async () => {
    const archive = await buildRelease(dir, {
      version: '3.3.0',
      privateKeyPem: keys.privateKeyPem,
    });
    for (const credential of [pos, relay.account]) {
      expect(await publish(archive, credential)).toMatchObject({
        status: 403,
        body: { error: { code: 'FORBIDDEN' } },
      });
    }
    expect((await download('3.1.0', { ...agent, password: 'wrong' })).status).toBe(401);
    expect((await fetch(`${relay.baseUrl}${releaseArchivePath('3.1.0', ARCH)}`)).status).toBe(401);
    expect((await download('9.9.9', agent)).status).toBe(404);
    expect((await download('3.1.0', relay.operator)).status).toBe(200);
    expect((await download('3.1.0', relay.account)).status).toBe(403);
  });

  it('tps fleet release publish FILE publishes from the command line, and says why it refuses', async () => {
    const archive = await buildRelease(dir, {
      version: '3.4.0',
      privateKeyPem: keys.privateKeyPem,
    });
    const tps = (...args: string[]) =>
      promisify(execFile)(process.execPath, tpsArgv(['fleet', 'release', 'publish', ...args]), {
        cwd: path.resolve(import.meta.dirname, '..'),
        env: {
          ...process.env,
          TPS_BASE_URL: relay.baseUrl,
          TPS_OPERATOR_USERNAME: relay.operator.username,
          TPS_OPERATOR_PASSWORD: relay.operator.password,
        },
      });
    const { stdout } = await tps(archive, '--json');
    expect(JSON.parse(stdout)).toMatchObject({ version: '3.4.0', arch: ARCH, files: 2 });
    const again = await tps(archive).catch((error: { code: number; stderr: string }) => error);
    expect(again).toMatchObject({ code: 1 });
    expect((again as { stderr: string }).stderr).toContain('RELEASE_EXISTS');
    expect((await download('3.4.0', agent)).status).toBe(200);
  });
});
