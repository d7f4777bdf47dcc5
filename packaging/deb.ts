/**
 * The release as a Debian package, built with dpkg-deb (docs/install.md; the layout in
 * docs/fleet.md, "Releases"). What root runs and what the agent's user may write never meet:
 *
 * ```
 *   /opt/tps-agent/release/      root's, dpkg's: the package's release; its runtime/node runs
 *                                the launcher, whatever the agent installs later
 *   /usr/bin/tps-agent           root's: the command (TPS_AGENT_COMMAND below)
 *   /lib/systemd/system/tps-agent.service
 *   /var/lib/tps-agent/update/   the agent's: releases/<version>/, current, incoming/, the
 *                                update's state; made and filled by postinst AS the agent's
 *                                user (setpriv), so root never writes, chowns or follows a
 *                                link in it
 * ```
 *
 * The unit is enabled as debhelper would (deb-systemd-helper in postinst and postrm).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Arch } from './manifest.js';

/** The launcher in a release folder (bundled by package-agent.ts). */
export const LAUNCHER_FILE = 'bin/tps-agent-launcher.js';

/** Where the package's own release lies: root's, never written by the agent. */
export const PACKAGE_RELEASE_DIR = '/opt/tps-agent/release';

const DEB_ARCH: Record<Arch, string> = { 'linux-x64': 'amd64', 'linux-arm64': 'arm64' };

/** Debian orders `~` before anything, as semver orders a pre-release before its release. */
export function debianVersion(version: string): string {
  return version.replace('-', '~');
}

export function debFileName(version: string, arch: Arch): string {
  return `tps-agent_${debianVersion(version)}_${DEB_ARCH[arch]}.deb`;
}

/**
 * `/usr/bin/tps-agent`. As root (the engineer pairing or checking a terminal) it runs the
 * package's release, root's, never code the agent's user can write; as any other user (the
 * agent's: `runuser -u tps-agent -- tps-agent doctor …`) the launcher, which runs `current`.
 */
const TPS_AGENT_COMMAND = `#!/bin/sh
# tps-agent on an installed terminal (docs/install.md). As root: the release this package
# installed (root's). Otherwise: the release the agent runs (current), through the launcher.
if [ "$(id -u)" = 0 ]; then
  exec ${PACKAGE_RELEASE_DIR}/runtime/node ${PACKAGE_RELEASE_DIR}/bin/tps-agent.js "$@"
fi
exec ${PACKAGE_RELEASE_DIR}/runtime/node ${PACKAGE_RELEASE_DIR}/${LAUNCHER_FILE} "$@"
`;

/**
 * Run as the agent's user: copies the package's release into its update root and points
 * \`current\` at it (a new link renamed over the old); keeps the release \`current\` named
 * before (to go back to by hand) and removes older ones.
 */
const SEED_AS_AGENT = `set -eu
umask 022
v="$1" root=/var/lib/tps-agent/update
mkdir -p "$root/releases" "$root/incoming"
before=$(basename "$(readlink "$root/current" 2>/dev/null || echo none)")
rm -rf "$root/incoming/package-$v"
cp -R ${PACKAGE_RELEASE_DIR} "$root/incoming/package-$v"
rm -rf "$root/releases/$v"
mv "$root/incoming/package-$v" "$root/releases/$v"
ln -sfn "releases/$v" "$root/current.new"
mv -T "$root/current.new" "$root/current"
for old in "$root"/releases/*; do
  case "$(basename "$old")" in "$v"|"$before") ;; *) rm -rf "$old" ;; esac
done`;

const POSTINST = (version: string) => `#!/bin/sh
# Creates the agent's user and its folders, sets up its update root as that user, enables
# the unit and starts the agent when it has a config (docs/install.md).
set -e
VERSION=${version}
if [ "$1" = configure ]; then
  if ! getent passwd tps-agent >/dev/null; then
    useradd --system --user-group --no-create-home --home-dir /var/lib/tps-agent \
      --shell /usr/sbin/nologin --comment "Terminal payment agent" tps-agent
  fi
  if getent group dialout >/dev/null; then usermod -a -G dialout tps-agent; fi
  # Made once, in folders only root can write; never chowned again (an operator's later
  # changes are kept), nothing inside them is touched by root.
  [ -e /etc/tps-agent ] || install -d -m 0750 -o root -g tps-agent /etc/tps-agent
  [ -e /var/lib/tps-agent ] || install -d -m 0700 -o tps-agent -g tps-agent /var/lib/tps-agent
  # Everything under /var/lib/tps-agent is the agent's: written as the agent's user.
  setpriv --reuid=tps-agent --regid=tps-agent --init-groups --inh-caps=-all --reset-env \
    -- /bin/sh -c '${SEED_AS_AGENT}' sh "$VERSION"
fi
if [ "$1" = configure ] || [ "$1" = abort-upgrade ] || [ "$1" = abort-deconfigure ] || [ "$1" = abort-remove ]; then
  # As debhelper's dh_installsystemd does: enabled on a new install, as it was on an upgrade.
  deb-systemd-helper unmask tps-agent.service >/dev/null || true
  if deb-systemd-helper --quiet was-enabled tps-agent.service; then
    deb-systemd-helper enable tps-agent.service >/dev/null || true
  else
    deb-systemd-helper update-state tps-agent.service >/dev/null || true
  fi
  if [ -d /run/systemd/system ]; then
    systemctl --system daemon-reload >/dev/null || true
    # Without a config it would only fail and restart every 2 s: started once paired.
    if [ -f /etc/tps-agent/agent.json ]; then
      deb-systemd-invoke restart tps-agent.service >/dev/null || true
    fi
  fi
  if [ ! -f /etc/tps-agent/agent.json ]; then
    echo "tps-agent: no /etc/tps-agent/agent.json yet; pair the terminal (tps-agent pair --relay URL), then: systemctl start tps-agent"
  fi
fi
exit 0
`;

const PRERM = `#!/bin/sh
# On removal (not on upgrade) the agent stops: SIGTERM, it closes its journal cleanly.
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
  deb-systemd-invoke stop tps-agent.service >/dev/null || true
fi
exit 0
`;

const POSTRM = `#!/bin/sh
# Purge removes the config (with its credential) and the agent's releases but never the
# journal: it may hold payment results the relay has not received yet (docs/install.md).
# rm -rf removes a link, never what it points to: what the agent's user made is safe to drop.
set -e
if [ "$1" = remove ] && [ -x /usr/bin/deb-systemd-helper ]; then
  deb-systemd-helper mask tps-agent.service >/dev/null || true
fi
if [ "$1" = purge ]; then
  if [ -x /usr/bin/deb-systemd-helper ]; then
    deb-systemd-helper purge tps-agent.service >/dev/null || true
    deb-systemd-helper unmask tps-agent.service >/dev/null || true
  fi
  rm -rf /etc/tps-agent /var/lib/tps-agent/update
  if [ -d /var/lib/tps-agent ]; then
    echo "tps-agent: /var/lib/tps-agent (the journal) is kept; remove it once the relay has every result"
  fi
fi
if [ -d /run/systemd/system ]; then systemctl --system daemon-reload >/dev/null || true; fi
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
  outFile: string;
}

export async function buildDeb(input: DebInput): Promise<void> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-deb-'));
  try {
    const releaseDir = path.join(root, PACKAGE_RELEASE_DIR.slice(1));
    fs.mkdirSync(path.dirname(releaseDir), { recursive: true });
    fs.cpSync(input.release, releaseDir, { recursive: true });
    fs.mkdirSync(path.join(root, 'usr/bin'), { recursive: true });
    fs.writeFileSync(path.join(root, 'usr/bin/tps-agent'), TPS_AGENT_COMMAND, { mode: 0o755 });
    const unitDir = path.join(root, 'lib/systemd/system');
    fs.mkdirSync(unitDir, { recursive: true });
    fs.copyFileSync(
      path.join(input.release, 'systemd/tps-agent.service'),
      path.join(unitDir, 'tps-agent.service'),
    );
    const control = [
      'Package: tps-agent',
      `Version: ${debianVersion(input.version)}`,
      `Architecture: ${DEB_ARCH[input.arch]}`,
      'Maintainer: Terminal Payment Service maintainers <maintainers@terminal-payment-service.invalid>',
      // It brings its own Node.js (runtime/node), which needs glibc 2.28 and GCC 5's
      // libstdc++ (Debian 10 and later), no nodejs package; and what the maintainer scripts run: useradd/usermod (passwd), setpriv (util-linux),
      // deb-systemd-helper (init-system-helpers).
      'Depends: libc6 (>= 2.28), libstdc++6 (>= 5.2), libgcc-s1, passwd, util-linux (>= 2.33), init-system-helpers (>= 1.54~)',
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
