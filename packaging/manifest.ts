/**
 * A release folder's manifest (every file with its size, SHA-256 and mode) and its
 * ed25519 signature (docs/fleet.md, "Releases"), and the signing key: from a file, or a
 * development key kept in `.tps/` (git-ignored) when none is given.
 */
import { createHash, createPrivateKey } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { generateReleaseKeyPair, signManifest } from '../common/release-signature.js';
import {
  RELEASE_MANIFEST_FILE,
  RELEASE_SIGNATURE_FILE,
  ReleaseManifest,
  type ReleaseArch,
  type ReleaseFile,
} from '../protocol/release.js';
import type { z } from 'zod';

/** linux-x64 or linux-arm64. */
export type Arch = z.infer<typeof ReleaseArch>;

/** In a release: `tps-agent`, a shell script that runs bin/tps-agent.js on runtime/node. */
export const RELEASE_WRAPPER_FILE = 'bin/tps-agent';

/** Files run directly: the entries, the wrapper, the runtime. The rest are read, not executed. */
const EXECUTABLE = new Set([
  'bin/tps-agent.js',
  'bin/tps-agent-launcher.js',
  RELEASE_WRAPPER_FILE,
  'runtime/node',
]);

/** Every file of the folder, sorted, as the manifest lists them; sets each file's mode. */
export function listReleaseFiles(folder: string): ReleaseFile[] {
  return fs
    .readdirSync(folder, { recursive: true, encoding: 'utf8' })
    .map((file) => file.split(path.sep).join('/'))
    .filter((file) => fs.statSync(path.join(folder, file)).isFile())
    .filter((file) => file !== RELEASE_MANIFEST_FILE && file !== RELEASE_SIGNATURE_FILE)
    .sort()
    .map((file) => {
      const absolute = path.join(folder, file);
      const bytes = fs.readFileSync(absolute);
      const mode = EXECUTABLE.has(file) ? 0o755 : 0o644;
      fs.chmodSync(absolute, mode);
      return {
        path: file,
        size: bytes.length,
        sha256: createHash('sha256').update(bytes).digest('hex'),
        mode,
      };
    });
}

export interface ManifestInput {
  folder: string;
  version: string;
  arch: Arch;
  nodeMajors: string[];
  privateKeyPem: string;
  now: Date;
}

/** Writes manifest.json and manifest.sig into the folder; returns the manifest. */
export function writeManifest(input: ManifestInput): ReleaseManifest {
  const manifest = ReleaseManifest.parse({
    name: 'tps-agent',
    version: input.version,
    arch: input.arch,
    node_abi: input.nodeMajors,
    created_at: input.now.toISOString(),
    files: listReleaseFiles(input.folder),
  });
  const bytes = Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`);
  fs.writeFileSync(path.join(input.folder, RELEASE_MANIFEST_FILE), bytes, { mode: 0o644 });
  fs.writeFileSync(
    path.join(input.folder, RELEASE_SIGNATURE_FILE),
    `${signManifest(bytes, input.privateKeyPem)}\n`,
    { mode: 0o644 },
  );
  return manifest;
}

export interface SigningKey {
  privateKeyPem: string;
  /** The file it came from, or where the development key was written. */
  file: string;
  development: boolean;
}

/**
 * The key from `file` when given; otherwise the development key in `devDir` (made on first
 * use, mode 0600, its public half beside it). Agents trust only the public key in their
 * config, so a release signed with a development key installs only where that key is set.
 */
export function loadSigningKey(file: string | undefined, devDir: string): SigningKey {
  if (file) {
    const privateKeyPem = fs.readFileSync(file, 'utf8');
    const type = createPrivateKey(privateKeyPem).asymmetricKeyType;
    if (type !== 'ed25519') {
      throw new Error(`${file}: an ed25519 private key (PKCS#8 PEM) is needed, not ${type}`);
    }
    return { privateKeyPem, file, development: false };
  }
  const keyFile = path.join(devDir, 'release-dev-key.pem');
  if (!fs.existsSync(keyFile)) {
    const pair = generateReleaseKeyPair();
    fs.mkdirSync(devDir, { recursive: true, mode: 0o700 });
    fs.writeFileSync(path.join(devDir, 'release-dev-key.pub.pem'), pair.publicKeyPem);
    fs.writeFileSync(keyFile, pair.privateKeyPem, { mode: 0o600, flag: 'wx' });
  }
  return { privateKeyPem: fs.readFileSync(keyFile, 'utf8'), file: keyFile, development: true };
}
