/**
 * The packaged agent as a terminal gets it: the x64 release is built once, its archive
 * unpacked outside the project (no node_modules around it), and run from there alone on
 * the Node.js it brings: `--version`, `doctor` against an emulated reader, and an agent
 * paying one transaction through a real relay. Also what an updater and dpkg rely on: the
 * manifest, its signature, the .deb's control fields and files.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { extract, list } from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateReleaseKeyPair, verifyManifest } from '../common/release-signature.js';
import { CardReaderFirmware } from '../firmware-bridge/emulator/card-reader-firmware.js';
import { openPty, type PtyPair } from '../firmware-bridge/transport/pty.js';
import { BundleRefused, bundleAgent } from '../packaging/bundle.js';
import {
  ROOT,
  packageAgent,
  projectVersion,
  type BuiltRelease,
} from '../packaging/package-agent.js';
import { NODE_RUNTIME_MAJOR, NODE_RUNTIME_VERSION } from '../packaging/runtime.js';
import { TerminalCreateResponse } from '../protocol/api.js';
import {
  RELEASE_MANIFEST_FILE,
  RELEASE_SIGNATURE_FILE,
  ReleaseManifest,
} from '../protocol/release.js';
import { payOnceThroughRelay, post, startTestRelay, type TestRelay } from './support/relay.js';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The words of the release's unit's ExecStart line. */
function unitExecStart(release: string): string[] {
  const unit = fs.readFileSync(path.join(release, 'systemd/tps-agent.service'), 'utf8');
  return /^ExecStart=(.*)$/m.exec(unit)?.[1]?.split(/\s+/) ?? [];
}

/**
 * `<node> <entry> …` in `cwd`, as a field engineer runs `bin/tps-agent` (the release's own
 * Node.js and `bin/tps-agent.js`), or `command` as given (the unit's line).
 */
function runAgentCli(cwd: string, args: string[], command = ['bin/tps-agent']) {
  const child = spawn(command[0]!, [...command.slice(1), ...args], {
    cwd,
    env: { PATH: process.env.PATH, TPS_LOG_FORMAT: 'json' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const done = new Promise<Run>((resolve) =>
    child.once('close', (code) => resolve({ code, stdout, stderr })),
  );
  return { child, done };
}

describe('the packaged agent (linux-x64)', () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-release-test-'));
  const unpacked = path.join(work, 'unpacked');
  const keys = generateReleaseKeyPair();
  const version = projectVersion();
  let release: BuiltRelease;
  let relay: TestRelay;

  beforeAll(async () => {
    const keyFile = path.join(work, 'release-key.pem');
    fs.writeFileSync(keyFile, keys.privateKeyPem, { mode: 0o600 });
    [release] = (await packageAgent({
      version,
      arches: ['linux-x64'],
      outDir: path.join(work, 'out'),
      keyFile,
    })) as [BuiltRelease];
    fs.mkdirSync(unpacked);
    await extract({ file: release.archive, cwd: unpacked });
    relay = await startTestRelay();
  }, 600_000);
  afterAll(async () => {
    await relay?.close();
    fs.rmSync(work, { recursive: true, force: true });
  });

  it('is named tps-agent-<version>-linux-x64.tar.gz and holds no node_modules of the project', () => {
    expect(path.basename(release.archive)).toBe(`tps-agent-${version}-linux-x64.tar.gz`);
    let dir = unpacked;
    while (path.dirname(dir) !== dir) {
      dir = path.dirname(dir);
      expect(fs.existsSync(path.join(dir, 'node_modules'))).toBe(false);
    }
  });

  it('brings the pinned Node.js for its CPU, listed and signed with the rest, and no nodejs to depend on', () => {
    const manifest = ReleaseManifest.parse(
      JSON.parse(fs.readFileSync(path.join(unpacked, RELEASE_MANIFEST_FILE), 'utf8')),
    );
    expect(manifest.files.find((f) => f.path === 'runtime/node')).toMatchObject({ mode: 0o755 });
    expect(manifest.node_abi).toEqual([NODE_RUNTIME_MAJOR]);
    const version = spawnSync(path.join(unpacked, 'runtime/node'), ['--version'], {
      encoding: 'utf8',
    });
    expect(version.stdout.trim()).toBe(`v${NODE_RUNTIME_VERSION}`);
    // No native module that would need a compiler for the other CPU.
    expect(manifest.files.some((f) => f.path.includes('better-sqlite3'))).toBe(false);
  });

  it('holds the manifest, its signature and exactly the files listed, each with its size, hash and mode', async () => {
    const entries: string[] = [];
    await list({ file: release.archive, onReadEntry: (entry) => entries.push(entry.path) });
    const manifestBytes = fs.readFileSync(path.join(unpacked, RELEASE_MANIFEST_FILE));
    const manifest = ReleaseManifest.parse(JSON.parse(manifestBytes.toString()));
    expect(manifest).toMatchObject({ name: 'tps-agent', version, arch: 'linux-x64' });
    expect(manifest.node_abi).toEqual([NODE_RUNTIME_MAJOR]);
    expect(entries.sort()).toEqual(
      [RELEASE_MANIFEST_FILE, RELEASE_SIGNATURE_FILE, ...manifest.files.map((f) => f.path)].sort(),
    );
    for (const file of manifest.files) {
      const bytes = fs.readFileSync(path.join(unpacked, file.path));
      expect({ path: file.path, size: bytes.length, sha256: file.sha256 }).toEqual({
        path: file.path,
        size: file.size,
        sha256: createHash('sha256').update(bytes).digest('hex'),
      });
      expect(fs.statSync(path.join(unpacked, file.path)).mode & 0o777).toBe(file.mode);
    }
    expect(manifest.files.find((f) => f.path === 'bin/tps-agent.js')?.mode).toBe(0o755);
    const paths = manifest.files.map((f) => f.path);
    expect(paths).toContain('runtime/node');
    expect(
      paths.some((p) => p.startsWith('node_modules/@serialport/bindings-cpp/prebuilds/linux-x64/')),
    ).toBe(true);
    expect(paths.some((p) => /prebuilds\/(?!linux-x64)/.test(p))).toBe(false);
    expect(paths.some((p) => /node_modules\/(fastify|pg|aedes|prom-client)\//.test(p))).toBe(false);
  });

  it('is signed: the signature verifies with the key, and not once a byte of the manifest changes', () => {
    const manifestBytes = fs.readFileSync(path.join(unpacked, RELEASE_MANIFEST_FILE));
    const signature = fs.readFileSync(path.join(unpacked, RELEASE_SIGNATURE_FILE), 'utf8');
    expect(verifyManifest(manifestBytes, signature, keys.publicKeyPem)).toBe(true);
    const tampered = Buffer.from(manifestBytes.toString().replace('"linux-x64"', '"linux-x65"'));
    expect(verifyManifest(tampered, signature, keys.publicKeyPem)).toBe(false);
  });

  it('refuses to bundle an entry that reaches the relay', async () => {
    const entry = path.join(work, 'entry-with-relay.ts');
    fs.writeFileSync(
      entry,
      `import { runFleet } from ${JSON.stringify(path.join(ROOT, 'cloud/fleet/cli.ts'))};\nvoid runFleet([]);\n`,
    );
    await expect(bundleAgent(ROOT, path.join(work, 'refused.js'), entry)).rejects.toThrow(
      BundleRefused,
    );
    await expect(bundleAgent(ROOT, path.join(work, 'refused.js'), entry)).rejects.toThrow(
      /cloud\/fleet\/cli\.ts/,
    );
  });

  it('prints its version', async () => {
    const run = await runAgentCli(unpacked, ['--version']).done;
    expect(run).toMatchObject({ code: 0, stdout: `tps-agent ${version}\n` });
  });

  it('refuses to start on a Node.js its native modules were not built for, naming both', async () => {
    const other = path.join(work, 'other-node');
    fs.cpSync(unpacked, other, { recursive: true });
    const manifestFile = path.join(other, RELEASE_MANIFEST_FILE);
    const manifest = ReleaseManifest.parse(JSON.parse(fs.readFileSync(manifestFile, 'utf8')));
    fs.writeFileSync(manifestFile, JSON.stringify({ ...manifest, node_abi: ['99'] }));
    const run = await runAgentCli(other, ['--config', path.join(work, 'none.json')]).done;
    expect(run.code).toBe(3);
    expect(run.stderr).toContain('built for Node.js 99');
    expect(run.stderr).toContain(NODE_RUNTIME_VERSION);
  });

  async function createTerminal() {
    const created = await post(relay.baseUrl, 'v1', '/terminal/create', {}, relay.account);
    expect(created.status).toBe(200);
    return TerminalCreateResponse.parse(created.body);
  }

  function writeAgentConfig(name: string, config: object): string {
    const file = path.join(work, `${name}.json`);
    fs.writeFileSync(file, JSON.stringify(config, null, 2), { mode: 0o600 });
    return file;
  }

  it('runs doctor against an emulated reader and the relay’s broker: every check passes', async () => {
    const terminal = await createTerminal();
    const pty: PtyPair | undefined = await openPty().catch(() => undefined);
    const firmware = new CardReaderFirmware({ battery: { percentage: 64 } });
    if (pty) firmware.serve(pty.stream);
    try {
      const config = writeAgentConfig('doctor', {
        terminal_id: terminal.terminal_id,
        broker: {
          url: terminal.agent.broker_url,
          username: terminal.agent.username,
          password: terminal.agent.password,
        },
        reader: pty
          ? { port: pty.path }
          : { emulated: { state_file: path.join(work, 'doctor-reader.jsonl') } },
        data_dir: path.join(work, 'doctor-data'),
      });
      const run = await runAgentCli(unpacked, ['doctor', '--config', config]).done;
      expect(run.stdout).toContain(`✓ config: terminal ${terminal.terminal_id}`);
      expect(run.stdout).toContain('credentials accepted');
      if (pty) expect(run.stdout).toContain('✓ card reader answers');
      expect(run.stdout).not.toContain('✗');
      expect(run.code).toBe(0);
    } finally {
      await firmware.close();
      await pty?.close();
    }
  });

  /**
   * The .deb's files unpacked under `dir` (dpkg-deb -x), with what postinst adds as the
   * agent's user: the update root, the package's release in it and `current`. `map` turns
   * an installed path into its place under `dir`.
   */
  function debLayout(dir: string) {
    const unpackedDeb = spawnSync('dpkg-deb', ['-x', release.deb!, dir], { encoding: 'utf8' });
    expect(unpackedDeb.status, unpackedDeb.stderr).toBe(0);
    const updateRoot = path.join(dir, 'var/lib/tps-agent/update');
    fs.mkdirSync(path.join(updateRoot, 'releases'), { recursive: true });
    fs.cpSync(path.join(dir, 'opt/tps-agent/release'), path.join(updateRoot, 'releases', version), {
      recursive: true,
    });
    fs.symlinkSync(path.join('releases', version), path.join(updateRoot, 'current'));
    return {
      updateRoot,
      map: (word: string) => word.replace(/^\/opt\/tps-agent\b/, path.join(dir, 'opt/tps-agent')),
    };
  }

  it('runs as the unit runs it: connects to the relay, pays one transaction, stops cleanly on SIGTERM', async () => {
    const terminal = await createTerminal();
    const config = writeAgentConfig('agent', {
      terminal_id: terminal.terminal_id,
      broker: {
        url: terminal.agent.broker_url,
        username: terminal.agent.username,
        password: terminal.agent.password,
      },
      reader: { emulated: { state_file: path.join(work, 'reader.jsonl'), delay_ms: 20 } },
      data_dir: path.join(work, 'agent-data'),
    });
    const execStart = unitExecStart(unpacked);
    expect(execStart).toContain('--max-semi-space-size=1');
    const layout = debLayout(path.join(work, 'unit-layout'));
    const command = execStart.map((word) =>
      layout.map(word).replace('/etc/tps-agent/agent.json', config),
    );
    // The update root is the packaged one (/var/lib/tps-agent/update) unless named.
    command.splice(command.indexOf('--config'), 0, '--root', layout.updateRoot);
    const agent = runAgentCli(work, [], command);
    try {
      await payOnceThroughRelay(relay.baseUrl, terminal, {
        external_id: 'packaged-1',
        requested_amount: 1250,
        wait_seconds: 10,
        connectMs: 10_000,
        everyMs: 40,
      });
    } finally {
      agent.child.kill('SIGTERM');
    }
    const run = await agent.done;
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('');
    expect(run.stdout).toContain('"msg":"agent started"');
  });

  it('pairs: shows a code, and once it is claimed writes its config (0600) and exits', async () => {
    const configFile = path.join(work, 'paired', 'agent.json');
    const pairing = runAgentCli(unpacked, [
      'pair',
      '--relay',
      relay.baseUrl,
      '--config',
      configFile,
      '--emulated-reader',
      '--data-dir',
      path.join(work, 'paired-data'),
    ]);
    let code: string | undefined;
    const tick = () => new Promise((resolve) => setTimeout(resolve, 40));
    let stdout = '';
    pairing.child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    for (let i = 0; i < 250 && !code; i++) {
      code = /Pairing code: (\S{4}-\S{4})/.exec(stdout)?.[1];
      if (!code) await tick();
    }
    expect(code).toBeDefined();
    const claimed = await post(
      relay.baseUrl,
      'v1',
      '/terminal/claim',
      { code, name: 'Packaged till' },
      relay.account,
    );
    expect(claimed.status).toBe(200);
    const run = await pairing.done;
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`Paired: terminal ${claimed.body.terminal_id} ("Packaged till"`);
    expect(fs.statSync(configFile).mode & 0o777).toBe(0o600);
    // What an installed terminal has: the tps-agent command and the unit, not the project's.
    expect(run.stdout).toContain(`runuser -u tps-agent -- tps-agent doctor --config ${configFile}`);
    expect(run.stdout).toContain('systemctl enable --now tps-agent');
    expect(run.stdout).not.toContain('tps agent');
    // The emulated reader's memory is written by the agent: in its data directory, not
    // beside the config it may only read.
    const paired = JSON.parse(fs.readFileSync(configFile, 'utf8')) as {
      reader: { emulated: { state_file: string } };
    };
    expect(paired.reader.emulated.state_file).toBe(
      path.join(work, 'paired-data', 'emulated-reader.json'),
    );
  });

  it('builds a .deb whose control fields and files are a tps-agent install', async () => {
    const dpkg = (flag: string, ...rest: string[]) =>
      new Promise<string>((resolve, reject) => {
        const child = spawn('dpkg-deb', [flag, release.deb!, ...rest], {
          stdio: ['ignore', 'pipe', 'inherit'],
        });
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
        child.once('error', reject);
        child.once('close', (code) =>
          code === 0 ? resolve(out) : reject(new Error(`dpkg-deb ${flag}: ${code}`)),
        );
      });
    expect(path.basename(release.deb!)).toBe(`tps-agent_${version.replace('-', '~')}_amd64.deb`);
    const info = await dpkg('-I');
    expect(info).toMatch(/^ Package: tps-agent$/m);
    expect(info).toMatch(
      new RegExp(`^ Version: ${version.replace('-', '~').replace(/\./g, '\\.')}$`, 'm'),
    );
    expect(info).toMatch(/^ Architecture: amd64$/m);
    expect(info).toMatch(
      /^ Depends: libc6 \(>= 2\.28\), libstdc\+\+6 \(>= 5\.2\), libgcc-s1, passwd, util-linux \(>= 2\.33\), init-system-helpers \(>= 1\.54~\)$/m,
    );
    expect(info).not.toMatch(/nodejs/);
    for (const script of ['postinst', 'prerm', 'postrm'])
      expect(info).toMatch(new RegExp(`\\* +${script} `));

    const lines = (await dpkg('-c')).trim().split('\n');
    const files = new Map(
      lines.map((line) => {
        const [mode, owner] = line.split(/\s+/);
        return [line.slice(line.indexOf('./') + 1).replace(/\/$/, ''), { mode, owner }];
      }),
    );
    // The package's release, root's: its Node.js runs the launcher, whatever the agent installs.
    const releaseDir = '/opt/tps-agent/release';
    for (const file of release.manifest.files) {
      expect(files.get(`${releaseDir}/${file.path}`)).toEqual({
        mode: file.mode === 0o755 ? '-rwxr-xr-x' : '-rw-r--r--',
        owner: 'root/root',
      });
    }
    expect(files.has(`${releaseDir}/${RELEASE_MANIFEST_FILE}`)).toBe(true);
    expect(files.has(`${releaseDir}/${RELEASE_SIGNATURE_FILE}`)).toBe(true);
    expect(files.get('/lib/systemd/system/tps-agent.service')?.mode).toBe('-rw-r--r--');
    expect(files.get('/usr/bin/tps-agent')).toEqual({ mode: '-rwxr-xr-x', owner: 'root/root' });
    // Nothing of the agent's (its releases, `current`) is dpkg's or under /opt.
    expect([...files.keys()].filter((f) => f.startsWith('/var'))).toEqual([]);
    expect(files.has('/opt/tps-agent/current')).toBe(false);

    // The maintainer scripts parse, and make what the unit and the updater rely on.
    const control = path.join(work, 'deb-control');
    await dpkg('-e', control);
    for (const script of ['postinst', 'prerm', 'postrm']) {
      const check = spawnSync('sh', ['-n', path.join(control, script)], { encoding: 'utf8' });
      expect(check.status, `${script}: ${check.stderr}`).toBe(0);
    }
    const postinst = fs.readFileSync(path.join(control, 'postinst'), 'utf8');
    expect(postinst).toContain('useradd --system');
    expect(postinst).toContain('install -d -m 0750 -o root -g tps-agent /etc/tps-agent');
    expect(postinst).toContain('install -d -m 0700 -o tps-agent -g tps-agent /var/lib/tps-agent');
    expect(postinst).toContain(`VERSION=${version}`);
    // Root never changes owners or modes of what the agent's user may replace.
    expect(postinst).not.toMatch(/\bchown\b|\bchmod\b/);
    expect(postinst).toContain('setpriv --reuid=tps-agent --regid=tps-agent');
    expect(postinst).toContain('deb-systemd-helper enable tps-agent.service');
    expect(fs.readFileSync(path.join(control, 'postrm'), 'utf8')).toContain(
      'deb-systemd-helper purge tps-agent.service',
    );
  });

  it('ships the unit for the release layout: it runs the launcher (then current/bin/tps-agent.js) as tps-agent', () => {
    const unit = fs.readFileSync(path.join(unpacked, 'systemd/tps-agent.service'), 'utf8');
    expect(unit).toMatch(
      /^ExecStart=\/opt\/tps-agent\/release\/runtime\/node (--[\w-]+(=\S+)? )*\/opt\/tps-agent\/release\/bin\/tps-agent-launcher\.js --config \/etc\/tps-agent\/agent\.json$/m,
    );
    expect(unit).toMatch(/^User=tps-agent$/m);
    // It writes only its StateDirectory (journal and releases), nothing of root's install.
    expect(unit).toMatch(/^StateDirectory=tps-agent$/m);
    expect(unit).not.toMatch(/ReadWritePaths=/);
  });
});
