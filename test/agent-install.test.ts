/**
 * The .deb installed on a stock Debian 12 as docs/install.md says, and nothing else: a
 * `debootstrap --variant=minbase` bookworm root (made once, kept as
 * /var/cache/tps-test/bookworm-minbase.tar, ≈ 2 minutes and 200 MB the first time), copied
 * fresh for each run; `apt install ./tps-agent_<v>_amd64.deb` inside it, no other
 * repository. Then what the docs promise: the user, folders, modes and links; the unit as
 * systemd reads it; pairing with a relay on this host, the agent started with the unit's
 * own ExecStart as its user, a payment through the API on the emulated reader; the old
 * escalation tried and failing; an upgrade; a purge.
 *
 * Needs root (chroot, mounts), debootstrap and, for the first run only, Debian's mirror;
 * skipped with the reason otherwise. The x64 release and its next version are built in the
 * test (a few minutes on a busy machine).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateReleaseKeyPair } from '../common/release-signature.js';
import { buildDeb } from '../packaging/deb.js';
import { writeManifest } from '../packaging/manifest.js';
import { packageAgent, projectVersion, type BuiltRelease } from '../packaging/package-agent.js';
import { TerminalClaimResponse } from '../protocol/pairing.js';
import {
  DEBIAN_MIRROR,
  debootstrapTar,
  mirrorReachable,
  onPath,
  run,
} from './support/debian-root.js';
import { payOnceThroughRelay, post, startTestRelay, type TestRelay } from './support/relay.js';

const CACHE = '/var/cache/tps-test/bookworm-minbase.tar';

/** Why the test cannot run here, or undefined. */
async function cannotRun(): Promise<string | undefined> {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return 'needs root on Linux';
  if (!onPath('unshare') || !onPath('chroot')) return 'needs unshare and chroot (util-linux)';
  if (!onPath('dpkg-deb')) return 'needs dpkg-deb';
  if (fs.existsSync(CACHE)) return undefined;
  if (!onPath('debootstrap')) return `needs debootstrap (apt-get install debootstrap) or ${CACHE}`;
  if (!(await mirrorReachable())) return `needs ${DEBIAN_MIRROR} once, to make ${CACHE}`;
  return undefined;
}

const reason = await cannotRun();
if (reason) process.stdout.write(`agent-install.test.ts skipped: ${reason}\n`);

describe.skipIf(reason !== undefined)('the .deb on a stock Debian 12 (bookworm, minbase)', () => {
  const work = fs.mkdtempSync(path.join('/var/tmp', 'tps-install-test-'));
  const root = path.join(work, 'root');
  const version = projectVersion();
  const next = version.replace(/(\d+)$/, (patch) => String(Number(patch) + 1));
  let release: BuiltRelease;
  let nextDeb: string;
  let relay: TestRelay;

  /**
   * A command inside the root, in a mount namespace of its own with /proc and /dev, so
   * nothing stays mounted after it. `user` runs it as that user (setpriv, its groups).
   */
  function inRoot(args: string[], user?: string) {
    const as = user ? ['setpriv', `--reuid=${user}`, `--regid=${user}`, '--init-groups', '--'] : [];
    return run(
      'unshare',
      [
        '--mount',
        '--propagation',
        'private',
        'sh',
        '-c',
        'mount -t proc proc "$0/proc" && mount --rbind /dev "$0/dev" && exec chroot "$@"',
        root,
        root,
        ...as,
        ...args,
      ],
      {
        PATH: '/usr/sbin:/usr/bin:/sbin:/bin',
        DEBIAN_FRONTEND: 'noninteractive',
        LANG: 'C.UTF-8',
        TPS_LOG_FORMAT: 'json',
      },
    );
  }
  const ok = async (args: string[], user?: string) => {
    const result = await inRoot(args, user).done;
    expect(result.code, `${args.join(' ')}:\n${result.stdout}\n${result.stderr}`).toBe(0);
    return result.stdout;
  };
  const at = (file: string) => path.join(root, file);
  const owner = (file: string) => {
    const stat = fs.lstatSync(at(file));
    return { uid: stat.uid, gid: stat.gid, mode: (stat.mode & 0o7777).toString(8) };
  };
  const idOf = async (name: string) => Number((await ok(['id', '-u', name])).trim());

  beforeAll(async () => {
    const tar = await debootstrapTar(CACHE, ['--variant=minbase']);
    fs.mkdirSync(root);
    const unpacked = await run('tar', ['-C', root, '-xf', tar]).done;
    if (unpacked.code !== 0) throw new Error(`tar -x: ${unpacked.stderr}`);
    // `/` as on any system, whatever mode a cached root was packed with.
    fs.chmodSync(root, 0o755);
    const keys = generateReleaseKeyPair();
    const keyFile = path.join(work, 'release-key.pem');
    fs.writeFileSync(keyFile, keys.privateKeyPem, { mode: 0o600 });
    [release] = (await packageAgent({
      version,
      arches: ['linux-x64'],
      outDir: path.join(work, 'out'),
      keyFile,
    })) as [BuiltRelease];
    // The next version: the same files but its package.json, signed again, as a .deb.
    const nextFolder = path.join(work, `tps-agent-${next}-linux-x64`);
    fs.cpSync(release.folder, nextFolder, { recursive: true });
    const packageJson = path.join(nextFolder, 'package.json');
    fs.writeFileSync(
      packageJson,
      fs
        .readFileSync(packageJson, 'utf8')
        .replace(`"version": "${version}"`, `"version": "${next}"`),
    );
    writeManifest({
      folder: nextFolder,
      version: next,
      arch: 'linux-x64',
      nodeMajors: release.manifest.node_abi,
      privateKeyPem: keys.privateKeyPem,
      now: new Date(),
    });
    nextDeb = path.join(work, 'out', `tps-agent_${next}_amd64.deb`);
    await buildDeb({ release: nextFolder, version: next, arch: 'linux-x64', outFile: nextDeb });
    for (const deb of [release.deb!, nextDeb])
      fs.copyFileSync(deb, at(`tmp/${path.basename(deb)}`));
    relay = await startTestRelay();
  }, 1_200_000);

  afterAll(async () => {
    await relay?.close();
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('installs with apt alone, from the .deb, with no nodejs', async () => {
    const installed = await ok(['apt', 'install', '-y', `./tmp/${path.basename(release.deb!)}`]);
    expect(installed).toContain('tps-agent: no /etc/tps-agent/agent.json yet; pair the terminal');
    const nodejs = await inRoot(['dpkg', '-s', 'nodejs']).done;
    expect(nodejs.code).not.toBe(0);
    expect((await ok(['tps-agent', '--version'])).trim()).toBe(`tps-agent ${version}`);
  }, 300_000);

  it('makes the user, folders, modes and links docs/install.md promises', async () => {
    const passwd = (await ok(['getent', 'passwd', 'tps-agent'])).trim().split(':');
    expect(passwd[5]).toBe('/var/lib/tps-agent');
    expect(passwd[6]).toBe('/usr/sbin/nologin');
    expect(await ok(['id', '-nG', 'tps-agent'])).toMatch(/\bdialout\b/);
    const agent = await idOf('tps-agent');
    const agentGroup = Number((await ok(['id', '-g', 'tps-agent'])).trim());
    expect(owner('etc/tps-agent')).toEqual({ uid: 0, gid: agentGroup, mode: '750' });
    expect(owner('var/lib/tps-agent')).toEqual({ uid: agent, gid: agentGroup, mode: '700' });
    expect(owner('var/lib/tps-agent/update')).toMatchObject({ uid: agent });
    expect(owner('opt/tps-agent')).toEqual({ uid: 0, gid: 0, mode: '755' });
    expect(owner('opt/tps-agent/release/runtime/node')).toEqual({ uid: 0, gid: 0, mode: '755' });
    expect(owner('usr/bin/tps-agent')).toEqual({ uid: 0, gid: 0, mode: '755' });
    expect(fs.readlinkSync(at('var/lib/tps-agent/update/current'))).toBe(`releases/${version}`);
    expect(owner(`var/lib/tps-agent/update/releases/${version}/runtime/node`)).toMatchObject({
      uid: agent,
      mode: '755',
    });
    // Enabled as deb-systemd-helper does it, without a running systemd.
    expect(
      fs.readlinkSync(at('etc/systemd/system/multi-user.target.wants/tps-agent.service')),
    ).toBe('/lib/systemd/system/tps-agent.service');
  });

  it('ships a unit systemd accepts', async () => {
    // systemd-analyze of this host (Debian 12's systemd) against the root, whose minbase
    // has no systemd: the host's units are lent to it, in a mount namespace of its own.
    const units = path.join(work, 'units');
    fs.cpSync('/lib/systemd/system', units, { recursive: true, verbatimSymlinks: true });
    fs.copyFileSync(
      at('lib/systemd/system/tps-agent.service'),
      path.join(units, 'tps-agent.service'),
    );
    const verify = await run('unshare', [
      '--mount',
      '--propagation',
      'private',
      'sh',
      '-c',
      'mount --bind "$1" "$0/usr/lib/systemd/system" && exec systemd-analyze --root="$0" verify /lib/systemd/system/tps-agent.service',
      root,
      units,
    ]).done;
    expect(verify.stderr.split('\n').filter((line) => /tps-agent/.test(line))).toEqual([]);
  });

  it('pairs, starts with the unit’s ExecStart as its user, and takes a payment', async () => {
    // Paired as docs/fleet.md says, by the engineer (root), with an emulated reader.
    const pairing = inRoot([
      'tps-agent',
      'pair',
      '--relay',
      relay.baseUrl,
      '--config',
      '/etc/tps-agent/agent.json',
      '--emulated-reader',
    ]);
    let stdout = '';
    pairing.child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    let code: string | undefined;
    for (let i = 0; i < 500 && !code; i++) {
      code = /Pairing code: (\S{4}-\S{4})/.exec(stdout)?.[1];
      if (!code) await new Promise((resolve) => setTimeout(resolve, 40));
    }
    expect(code, stdout).toBeDefined();
    const claimed = await post(
      relay.baseUrl,
      'v1',
      '/terminal/claim',
      { code, name: 'Installed till' },
      relay.account,
    );
    expect(claimed.status).toBe(200);
    const paired = await pairing.done;
    expect(paired.code, paired.stderr).toBe(0);
    expect(paired.stdout).toContain('runuser -u tps-agent -- tps-agent doctor');
    await ok(['chown', 'root:tps-agent', '/etc/tps-agent/agent.json']);
    await ok(['chmod', '0640', '/etc/tps-agent/agent.json']);
    const doctor = await inRoot([
      'runuser',
      '-u',
      'tps-agent',
      '--',
      'tps-agent',
      'doctor',
      '--config',
      '/etc/tps-agent/agent.json',
    ]).done;
    expect(doctor.stdout).not.toContain('✗');

    const unit = fs.readFileSync(at('lib/systemd/system/tps-agent.service'), 'utf8');
    const execStart = /^ExecStart=(.*)$/m.exec(unit)![1]!.split(/\s+/);
    const agent = inRoot(execStart, 'tps-agent');
    const claim = TerminalClaimResponse.parse(claimed.body);
    try {
      await payOnceThroughRelay(relay.baseUrl, claim, {
        external_id: 'installed-1',
        requested_amount: 990,
        wait_seconds: 20,
        connectMs: 20_000,
        everyMs: 40,
      });
    } finally {
      agent.child.kill('SIGTERM');
    }
    const stopped = await agent.done;
    expect(stopped.stdout).toContain('"msg":"agent started"');
    // Its journal and its emulated reader's memory are in its data directory.
    expect(fs.existsSync(at('var/lib/tps-agent/agent.sqlite'))).toBe(true);
    expect(fs.existsSync(at('var/lib/tps-agent/emulated-reader.json'))).toBe(true);
  }, 120_000);

  it('a reinstall does not follow what the agent’s user replaced with links to root’s folders', async () => {
    const before = ['etc', 'etc/passwd', 'usr/bin', 'opt/tps-agent', 'etc/tps-agent'].map(owner);
    const etcBefore = fs.readdirSync(at('etc')).sort();
    // As the agent's user: its update root and its releases become links to root's folders.
    await ok(['mv', '/var/lib/tps-agent/update', '/var/lib/tps-agent/update.away'], 'tps-agent');
    await ok(['ln', '-s', '/etc', '/var/lib/tps-agent/update'], 'tps-agent');
    // postinst's copy, as the agent's user, finds no way into /etc: the install fails.
    const attacked = await inRoot([
      'apt',
      'install',
      '-y',
      '--reinstall',
      `./tmp/${path.basename(release.deb!)}`,
    ]).done;
    expect(attacked.code).not.toBe(0);
    expect(['etc', 'etc/passwd', 'usr/bin', 'opt/tps-agent', 'etc/tps-agent'].map(owner)).toEqual(
      before,
    );
    expect(fs.readdirSync(at('etc')).sort()).toEqual(etcBefore);
    // Put back as it was, the interrupted install then completes.
    await ok(['rm', '/var/lib/tps-agent/update'], 'tps-agent');
    await ok(['mv', '/var/lib/tps-agent/update.away', '/var/lib/tps-agent/update'], 'tps-agent');
    await ok(['dpkg', '--configure', '-a']);
    expect(fs.readlinkSync(at('var/lib/tps-agent/update/current'))).toBe(`releases/${version}`);
  }, 300_000);

  it('upgrades to the next version: current moves, the release before is kept', async () => {
    await ok(['apt', 'install', '-y', `./tmp/${path.basename(nextDeb)}`]);
    expect((await ok(['tps-agent', '--version'])).trim()).toBe(`tps-agent ${next}`);
    expect(fs.readlinkSync(at('var/lib/tps-agent/update/current'))).toBe(`releases/${next}`);
    expect(fs.readdirSync(at('var/lib/tps-agent/update/releases')).sort()).toEqual(
      [version, next].sort(),
    );
  }, 300_000);

  it('purges: the config, the install and the releases go, the journal stays', async () => {
    await ok(['apt', 'purge', '-y', 'tps-agent']);
    for (const gone of [
      'etc/tps-agent',
      'opt/tps-agent',
      'usr/bin/tps-agent',
      'var/lib/tps-agent/update',
    ]) {
      expect(fs.existsSync(at(gone)), gone).toBe(false);
    }
    expect(fs.existsSync(at('var/lib/tps-agent/agent.sqlite'))).toBe(true);
    expect(fs.existsSync(at('etc/systemd/system/multi-user.target.wants/tps-agent.service'))).toBe(
      false,
    );
  }, 300_000);
});
