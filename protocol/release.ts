/**
 * An agent release: a folder of files, a manifest naming each with its SHA-256, and an
 * ed25519 signature over the manifest's exact bytes (docs/fleet.md, "Releases"). The
 * packager writes it, the relay stores it, the agent checks it before installing.
 */
import { z } from 'zod';

/** A release version: semver, optionally with a pre-release or build part. */
export const ReleaseVersion = z
  .string()
  .max(64)
  .regex(
    /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/,
    'must be a version such as 1.4.2 or 1.5.0-rc.1',
  );

export const ReleaseArch = z.enum(['linux-x64', 'linux-arm64']);
export type ReleaseArch = z.infer<typeof ReleaseArch>;

/** A path inside a release: relative, forward slashes, no `..`, no hidden escape. */
export const ReleaseFilePath = z
  .string()
  .min(1)
  .max(512)
  .refine(
    (p) =>
      !p.startsWith('/') &&
      !p.includes('\\') &&
      !p.includes('\0') &&
      p.split('/').every((part) => part !== '' && part !== '.' && part !== '..'),
    'must be a relative path without "." or ".." parts',
  );

export const ReleaseFile = z.strictObject({
  path: ReleaseFilePath,
  size: z.number().int().nonnegative(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/, 'must be a SHA-256 hash in lowercase hex'),
  /** Executable files keep their mode when unpacked. */
  mode: z.union([z.literal(0o644), z.literal(0o755)]).default(0o644),
});
export type ReleaseFile = z.infer<typeof ReleaseFile>;

export const ReleaseManifest = z.strictObject({
  name: z.literal('tps-agent'),
  version: ReleaseVersion,
  arch: ReleaseArch,
  /** The Node.js major versions the bundled native modules were built for. */
  node_abi: z.array(z.string().regex(/^\d+$/)).min(1),
  created_at: z.iso.datetime(),
  files: z.array(ReleaseFile).min(1).max(10_000),
});
export type ReleaseManifest = z.infer<typeof ReleaseManifest>;

/** File names inside a release folder and its archive. */
export const RELEASE_MANIFEST_FILE = 'manifest.json';
export const RELEASE_SIGNATURE_FILE = 'manifest.sig';
