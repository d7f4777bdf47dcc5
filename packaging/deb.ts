/**
 * The release as a Debian package, built with dpkg-deb: the release folder under
 * /opt/tps-agent/releases/<version>/, its launcher as /opt/tps-agent/launcher.js (outside
 * every release: dpkg replaces it, never the updater), the unit in /lib/systemd/system,
 * and maintainer scripts that make the user, the config and journal folders and the
 * `current` link
 * (docs/fleet.md, "Releases"; the field engineer's side in docs/install.md).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Arch } from './manifest.js';

/** The launcher in a release folder (bundled by package-agent.ts). */
export const LAUNCHER_FILE = 'bin/tps-agent-launcher.js';

const DEB_ARCH: Record<Arch, string> = { 'linux-x64': 'amd64', 'linux-arm64': 'arm64' };

/** Debian orders `~` before anything, as semver orders a pre-release before its release. */
export function debianVersion(version: string): string {
  return version.replace('-', '~');
}

export function debFileName(version: string, arch: Arch): string {
  return `tps-agent_${debianVersion(version)}_${DEB_ARCH[arch]}.deb`;
}

const POSTINST = (version: string) => `#!/bin/sh
# Creates the agent's user and folders, points /opt/tps-agent/current at this release and
# starts the agent when it has a config (docs/install.md).
set -e
RELEASE=releases/${version}
if [ "$1" = configure ]; then
  if ! getent passwd tps-agent >/dev/null; then
    useradd --system --user-group --no-create-home --home-dir /var/lib/tps-agent \\
      --shell /usr/sbin/nologin --comment "Terminal payment agent" tps-agent
  fi
  if getent group dialout >/dev/null; then usermod -a -G dialout tps-agent; fi
  # Made once; an operator's later changes to them are kept.
  [ -d /etc/tps-agent ] || install -d -m 0750 -o root -g tps-agent /etc/tps-agent
  [ -d /var/lib/tps-agent ] || install -d -m 0700 -o tps-agent -g tps-agent /var/lib/tps-agent
  # The agent's updater installs releases beside this one and switches the link.
  chown tps-agent:tps-agent /opt/tps-agent /opt/tps-agent/releases
  chmod 0755 /opt/tps-agent /opt/tps-agent/releases
  ln -sfn "$RELEASE" /opt/tps-agent/current.new
  chown -h tps-agent:tps-agent /opt/tps-agent/current.new
  mv -T /opt/tps-agent/current.new /opt/tps-agent/current
  if [ -d /run/systemd/system ]; then
    systemctl daemon-reload
    systemctl enable tps-agent.service >/dev/null 2>&1 || true
    # Without a config it would only fail and restart every 2 s: started once paired.
    if [ -f /etc/tps-agent/agent.json ]; then
      systemctl restart tps-agent.service
    else
      echo "tps-agent: no /etc/tps-agent/agent.json yet; pair the terminal, then: systemctl start tps-agent"
    fi
  fi
fi
exit 0
`;

const PRERM = `#!/bin/sh
# On removal (not on upgrade) the agent stops: SIGTERM, it closes its journal cleanly.
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
  systemctl disable --now tps-agent.service >/dev/null 2>&1 || true
fi
exit 0
`;

const POSTRM = `#!/bin/sh
# Purge removes the releases and the config (with its credential) but never the journal:
# it may hold payment results the relay has not received yet (docs/install.md).
set -e
case "$1" in
  remove)
    [ -e /opt/tps-agent/current ] || rm -f /opt/tps-agent/current
    ;;
  purge)
    rm -rf /opt/tps-agent /etc/tps-agent
    if [ -d /var/lib/tps-agent ]; then
      echo "tps-agent: /var/lib/tps-agent (the journal) is kept; remove it once the relay has every result"
    fi
    ;;
esac
if [ -d /run/systemd/system ]; then systemctl daemon-reload || true; fi
exit 0
`;

function run(command: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0 ? resolve(output) : reject(new Error(`${command} failed (${code}): ${output}`)),
    );
  });
}

function folderSizeKiB(folder: string): number {
  return fs
    .readdirSync(folder, { recursive: true, encoding: 'utf8' })
    .map((file) => fs.statSync(path.join(folder, file)))
    .filter((stat) => stat.isFile())
    .reduce((sum, stat) => sum + Math.ceil(stat.size / 1024), 0);
}

export interface DebInput {
  /** The complete release folder (manifest and signature written). */
  release: string;
  version: string;
  arch: Arch;
  nodeMajor: string;
  outFile: string;
}

export async function buildDeb(input: DebInput): Promise<void> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-deb-'));
  try {
    const releaseDir = path.join(root, 'opt/tps-agent/releases', input.version);
    fs.mkdirSync(path.dirname(releaseDir), { recursive: true });
    fs.cpSync(input.release, releaseDir, { recursive: true });
    fs.copyFileSync(
      path.join(input.release, LAUNCHER_FILE),
      path.join(root, 'opt/tps-agent/launcher.js'),
    );
    fs.chmodSync(path.join(root, 'opt/tps-agent/launcher.js'), 0o755);
    const unitDir = path.join(root, 'lib/systemd/system');
    fs.mkdirSync(unitDir, { recursive: true });
    fs.copyFileSync(
      path.join(input.release, 'systemd/tps-agent.service'),
      path.join(unitDir, 'tps-agent.service'),
    );
    const major = Number(input.nodeMajor);
    const control = [
      'Package: tps-agent',
      `Version: ${debianVersion(input.version)}`,
      `Architecture: ${DEB_ARCH[input.arch]}`,
      'Maintainer: Terminal Payment Service maintainers <maintainers@terminal-payment-service.invalid>',
      // Its native modules are built for one Node.js major (the manifest's node_abi), on
      // Debian 12: better-sqlite3 needs GLIBC_2.34 and GLIBCXX_3.4.29 (GCC 11).
      `Depends: nodejs (>= ${major === 20 ? '20.19' : major}), nodejs (<< ${major + 1}), libc6 (>= 2.34), libstdc++6 (>= 11)`,
      'Section: net',
      'Priority: optional',
      `Installed-Size: ${folderSizeKiB(root)}`,
      'Description: Terminal payment agent',
      " Drives a payment terminal's card reader and receipt printer over serial and keeps",
      ' one MQTT link to the cloud relay; journals every payment before it acts.',
      '',
    ].join('\n');
    const debian = path.join(root, 'DEBIAN');
    fs.mkdirSync(debian, { mode: 0o755 });
    fs.writeFileSync(path.join(debian, 'control'), control, { mode: 0o644 });
    for (const [name, text] of [
      ['postinst', POSTINST(input.version)],
      ['prerm', PRERM],
      ['postrm', POSTRM],
    ] as const) {
      fs.writeFileSync(path.join(debian, name), text, { mode: 0o755 });
    }
    for (const dir of fs.readdirSync(root, { recursive: true, encoding: 'utf8' })) {
      if (fs.statSync(path.join(root, dir)).isDirectory())
        fs.chmodSync(path.join(root, dir), 0o755);
    }
    fs.chmodSync(root, 0o755);
    await run('dpkg-deb', ['--root-owner-group', '-Zgzip', '--build', root, input.outFile]);
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}
