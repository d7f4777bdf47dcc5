/**
 * The linux-arm64 release on an x64 machine, under qemu user-mode: its own Node.js with
 * Debian 12's arm64 libraries (`debootstrap --arch=arm64 --foreign`, made once and kept as
 * /var/cache/tps-test/bookworm-arm64-foreign.tar, ≈ 1 minute and 220 MB the first time) as
 * the sysroot. `--version`, doctor with an emulated reader, and one paid purchase through
 * a relay on this host. Emulated, the agent needs ≈ 45 s to connect.
 *
 * Needs qemu-aarch64 (apt-get install qemu-user) and, for the first run only, debootstrap
 * and Debian's mirror; skipped with the reason otherwise.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packageAgent, projectVersion, type BuiltRelease } from '../packaging/package-agent.js';
import { TerminalCreateResponse } from '../protocol/api.js';
import {
  DEBIAN_MIRROR,
  debootstrapTar,
  mirrorReachable,
  onPath,
  run,
} from './support/debian-root.js';
import { payOnceThroughRelay, post, startTestRelay, type TestRelay } from './support/relay.js';

const CACHE = '/var/cache/tps-test/bookworm-arm64-foreign.tar';

async function cannotRun(): Promise<string | undefined> {
  if (process.platform !== 'linux' || process.arch !== 'x64') return 'needs an x64 Linux';
  if (!onPath('qemu-aarch64')) return 'needs qemu-aarch64 (apt-get install qemu-user)';
  if (fs.existsSync(CACHE)) return undefined;
  if (process.getuid?.() !== 0 || !onPath('debootstrap')) {
    return `needs ${CACHE}, made once by root with debootstrap`;
  }
  if (!(await mirrorReachable())) return `needs ${DEBIAN_MIRROR} once, to make ${CACHE}`;
  return undefined;
}

const reason = await cannotRun();
if (reason) process.stdout.write(`agent-arm64.test.ts skipped: ${reason}\n`);

describe.skipIf(reason !== undefined)('the linux-arm64 release under qemu user-mode', () => {
  const work = fs.mkdtempSync(path.join('/var/tmp', 'tps-arm64-test-'));
  const sysroot = path.join(work, 'sysroot');
  let release: BuiltRelease;
  let relay: TestRelay;

  /** The release's bin/tps-agent.js on its own runtime/node, emulated. */
  const agent = (args: string[]) =>
    run('qemu-aarch64', [
      '-L',
      sysroot,
      path.join(release.folder, 'runtime/node'),
      '--max-semi-space-size=1',
      '--no-opt',
      '--no-sparkplug',
      path.join(release.folder, 'bin/tps-agent.js'),
      ...args,
    ]);

  beforeAll(async () => {
    fs.mkdirSync(sysroot);
    const unpacked = await run('tar', [
      '-C',
      sysroot,
      '-xf',
      await debootstrapTar(CACHE, ['--arch=arm64', '--variant=minbase', '--foreign']),
    ]).done;
    if (unpacked.code !== 0) throw new Error(`tar -x: ${unpacked.stderr}`);
    [release] = (await packageAgent({
      version: projectVersion(),
      arches: ['linux-arm64'],
      outDir: path.join(work, 'out'),
      deb: false,
    })) as [BuiltRelease];
    relay = await startTestRelay();
  }, 900_000);

  afterAll(async () => {
    await relay?.close();
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('prints its version', async () => {
    const version = await agent(['--version']).done;
    expect(version.stdout.trim()).toBe(`tps-agent ${projectVersion()}`);
  }, 120_000);

  it('passes doctor with an emulated reader, and takes one paid purchase', async () => {
    const created = TerminalCreateResponse.parse(
      (await post(relay.baseUrl, 'v1', '/terminal/create', {}, relay.account)).body,
    );
    const config = path.join(work, 'agent.json');
    fs.writeFileSync(
      config,
      JSON.stringify({
        terminal_id: created.terminal_id,
        broker: {
          url: created.agent.broker_url,
          username: created.agent.username,
          password: created.agent.password,
        },
        reader: { emulated: { state_file: path.join(work, 'data/reader.json'), delay_ms: 20 } },
        data_dir: path.join(work, 'data'),
      }),
    );
    const doctor = await agent(['doctor', '--config', config]).done;
    expect(doctor.stdout).toContain('credentials accepted');
    expect(doctor.stdout).not.toContain('✗');

    const running = agent(['--config', config]);
    try {
      await payOnceThroughRelay(relay.baseUrl, created, {
        external_id: 'arm64-1',
        requested_amount: 500,
        wait_seconds: 60,
        connectMs: 300_000,
        everyMs: 500,
      });
    } finally {
      running.child.kill('SIGTERM');
    }
    expect((await running.done).code).toBe(0);
  }, 600_000);
});
