/**
 * The release folders on a terminal (docs/fleet.md, "The updater"):
 *
 * ```
 *   <root>/releases/<version>/   one folder per installed release (the running one and the one before)
 *   <root>/current               symlink to releases/<version>: what the supervisor starts
 *   <root>/incoming/             a download and its unpacked copy while they are checked
 *   <root>/update-state.json     how far an update got (update-state.ts)
 * ```
 *
 * A release is unpacked and checked in `incoming/`, then moved whole into `releases/`
 * (a rename), and `current` is replaced by a rename too: each step is atomic, so a power
 * loss leaves `current` on a complete release.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { verifyManifest } from '../common/release-signature.js';
import {
  RELEASE_MANIFEST_FILE,
  RELEASE_SIGNATURE_FILE,
  ReleaseArch,
  ReleaseManifest,
  ReleaseVersion,
} from '../protocol/index.js';
import { syncDirectory } from './update-state.js';

/**
 * Where a packaged terminal keeps its releases: under the agent's own state directory, the
 * only place its user may write; root's install (/opt/tps-agent) is never in it
 * (docs/fleet.md, "Releases").
 */
export const DEFAULT_UPDATE_ROOT = '/var/lib/tps-agent/update';

/** In a release: the Node.js it brings (packaging/runtime.ts) and its agent's entry. */
export const RELEASE_RUNTIME_FILE = 'runtime/node';
export const RELEASE_ENTRY_FILE = 'bin/tps-agent.js';

/** Largest unpacked release (files summed): a packaged agent is ≈ 130 MB, its Node.js most of it. */
export const MAX_UNPACKED_BYTES = 512 * 1024 * 1024;
const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;
const MAX_ENTRIES = 20_000;

/** Why a release is not installed: `refused` for a release that is not what it claims. */
export class ReleaseProblem extends Error {
  override readonly name = 'ReleaseProblem';
  constructor(
    readonly result: 'refused' | 'failed',
    message: string,
  ) {
    super(message);
  }
}

export const releasesDir = (root: string) => path.join(root, 'releases');
export const releaseDir = (root: string, version: string) => path.join(releasesDir(root), version);
export const incomingDir = (root: string) => path.join(root, 'incoming');

/** The architecture of this machine as releases name it; undefined where none is built. */
export function thisArch(): ReleaseArch | undefined {
  const parsed = ReleaseArch.safeParse(`${process.platform}-${process.arch}`);
  return parsed.success ? parsed.data : undefined;
}

/** The version `current` points to, or undefined (no symlink, or not to a release folder). */
export function currentVersion(root: string): string | undefined {
  let target: string;
  try {
    target = fs.readlinkSync(path.join(root, 'current'));
  } catch {
    return undefined;
  }
  const version = path.basename(target);
  if (!ReleaseVersion.safeParse(version).success) return undefined;
  if (path.resolve(root, target) !== releaseDir(root, version)) return undefined;
  return fs.existsSync(path.join(releaseDir(root, version), RELEASE_MANIFEST_FILE))
    ? version
    : undefined;
}

/** Points `current` at releases/<version> by renaming a new symlink over it. */
export function switchCurrent(root: string, version: string): void {
  const link = path.join(root, 'current');
  const temporary = `${link}.tmp`;
  fs.rmSync(temporary, { force: true });
  fs.symlinkSync(path.join('releases', version), temporary);
  fs.renameSync(temporary, link);
  syncDirectory(root);
}

/** Leftovers of an update that stopped half-way: downloads and unpacked copies. */
export function clearIncoming(root: string): void {
  fs.rmSync(incomingDir(root), { recursive: true, force: true });
}

/** Removes every release folder but those kept (the running one and the one to go back to). */
export function pruneReleases(root: string, keep: ReadonlyArray<string | undefined>): void {
  let names: string[];
  try {
    names = fs.readdirSync(releasesDir(root));
  } catch {
    return;
  }
  for (const name of names) {
    if (!keep.includes(name)) {
      fs.rmSync(path.join(releasesDir(root), name), { recursive: true, force: true });
    }
  }
}

/**
 * Unpacks an archive into incoming/<version>, checks it (signature over the manifest
 * with `publicKeyPem`, version, architecture, and every file's size and SHA-256, with no
 * file the manifest does not list), and moves it to releases/<version>. Throws
 * ReleaseProblem; nothing reaches releases/ unless every check passed.
 */
export async function installRelease(options: {
  root: string;
  archive: string;
  version: string;
  arch: ReleaseArch;
  publicKeyPem: string;
  /** Called between the steps (tests kill the process there). */
  step?: (name: 'unpacked' | 'verified' | 'installed') => void;
}): Promise<ReleaseManifest> {
  const { root, version } = options;
  const staging = path.join(incomingDir(root), version);
  fs.rmSync(staging, { recursive: true, force: true });
  fs.mkdirSync(staging, { recursive: true, mode: 0o755 });
  await unpack(options.archive, staging);
  options.step?.('unpacked');
  const manifest = verifyUnpacked(staging, options);
  options.step?.('verified');
  const target = releaseDir(root, version);
  fs.mkdirSync(releasesDir(root), { recursive: true, mode: 0o755 });
  fs.rmSync(target, { recursive: true, force: true });
  fs.renameSync(staging, target);
  syncDirectory(releasesDir(root));
  options.step?.('installed');
  return manifest;
}

/** Regular files and folders only; no links, devices or paths outside (tar's own checks). */
async function unpack(archive: string, into: string): Promise<void> {
  let problem: string | undefined;
  let bytes = 0;
  let entries = 0;
  try {
    // Loaded here, not at start: an agent unpacks a release a few times a year, and tar
    // evaluated at start held ≈ 0.2 MB of its heap all the time.
    const tar = await import('tar');
    await tar.x({
      file: archive,
      cwd: into,
      strict: true,
      preservePaths: false,
      preserveOwner: false,
      filter: (entryPath, entry) => {
        const type = 'type' in entry ? entry.type : undefined;
        entries += 1;
        bytes += entry.size ?? 0;
        if (type !== 'File' && type !== 'OldFile' && type !== 'Directory') {
          problem ??= `the archive holds a ${String(type)} entry (${entryPath}); only files and folders are allowed`;
        } else if (entries > MAX_ENTRIES || bytes > MAX_UNPACKED_BYTES) {
          problem ??= `the archive is larger than ${MAX_ENTRIES} entries or ${MAX_UNPACKED_BYTES} bytes`;
        }
        return problem === undefined;
      },
    });
  } catch (error) {
    throw new ReleaseProblem(
      'refused',
      `the archive cannot be unpacked: ${(error as Error).message}`,
    );
  }
  if (problem) throw new ReleaseProblem('refused', problem);
}

function verifyUnpacked(
  dir: string,
  options: { version: string; arch: ReleaseArch; publicKeyPem: string },
): ReleaseManifest {
  const manifestFile = path.join(dir, RELEASE_MANIFEST_FILE);
  const signatureFile = path.join(dir, RELEASE_SIGNATURE_FILE);
  for (const file of [manifestFile, signatureFile]) {
    const stat = fs.lstatSync(file, { throwIfNoEntry: false });
    if (!stat?.isFile() || stat.size > MAX_MANIFEST_BYTES) {
      throw new ReleaseProblem('refused', `the archive has no ${path.basename(file)}`);
    }
  }
  const manifestBytes = fs.readFileSync(manifestFile);
  const signature = fs.readFileSync(signatureFile, 'utf8');
  if (!verifyManifest(manifestBytes, signature, options.publicKeyPem)) {
    throw new ReleaseProblem(
      'refused',
      'the manifest signature does not verify with the release key',
    );
  }
  let manifest: ReleaseManifest;
  try {
    manifest = ReleaseManifest.parse(JSON.parse(manifestBytes.toString('utf8')));
  } catch {
    throw new ReleaseProblem('refused', 'the signed manifest is not a release manifest');
  }
  if (manifest.version !== options.version) {
    throw new ReleaseProblem(
      'refused',
      `the archive holds version ${manifest.version}, not ${options.version}`,
    );
  }
  if (manifest.arch !== options.arch) {
    throw new ReleaseProblem(
      'refused',
      `the release is built for ${manifest.arch}, this is ${options.arch}`,
    );
  }
  const listed = new Map(manifest.files.map((file) => [file.path, file]));
  // A release that brings no Node.js runs on the launcher's, the package's: its native
  // modules must be built for that one, or it could only fail its trial.
  const major = process.versions.node.split('.')[0]!;
  if (!listed.has(RELEASE_RUNTIME_FILE) && !manifest.node_abi.includes(major)) {
    throw new ReleaseProblem(
      'refused',
      `the release brings no Node.js of its own and is built for Node.js ${manifest.node_abi.join(', ')}; this terminal's is Node.js ${process.versions.node}`,
    );
  }
  const found = listFiles(dir).filter(
    (p) => p !== RELEASE_MANIFEST_FILE && p !== RELEASE_SIGNATURE_FILE,
  );
  for (const relative of found) {
    if (!listed.has(relative)) {
      throw new ReleaseProblem('refused', `${relative} is in the archive but not in the manifest`);
    }
  }
  for (const file of manifest.files) {
    const full = path.join(dir, file.path);
    const stat = fs.lstatSync(full, { throwIfNoEntry: false });
    if (!stat?.isFile()) throw new ReleaseProblem('refused', `${file.path} is missing`);
    if (stat.size !== file.size || sha256File(full) !== file.sha256) {
      throw new ReleaseProblem('refused', `${file.path} does not match its hash in the manifest`);
    }
    fs.chmodSync(full, file.mode);
    syncFile(full);
  }
  for (const folder of listFolders(dir)) syncDirectory(folder);
  return manifest;
}

function listFiles(dir: string, prefix = ''): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(path.join(dir, prefix), { withFileTypes: true })) {
    const relative = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory()) out.push(...listFiles(dir, relative));
    else out.push(relative);
  }
  return out;
}

function listFolders(dir: string): string[] {
  const out = [dir];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.isDirectory()) out.push(...listFolders(path.join(dir, entry.name)));
  }
  return out;
}

function sha256File(file: string): string {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

function syncFile(file: string): void {
  const fd = fs.openSync(file, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
