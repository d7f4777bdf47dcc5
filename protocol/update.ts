/**
 * Updates of the agent over the MQTT link (docs/fleet.md, "Updates"; docs/mqtt.md). Both
 * messages are retained state, not events: the relay's `update` order says which release
 * a terminal should run (the last one wins), the agent's `update-status` says which one it
 * runs and how its last update ended. Applying either twice changes nothing.
 */
import { z } from 'zod';
import { TimestampV1 } from './fields.js';
import { plainText } from './plain-text.js';
import { ReleaseArch, ReleaseVersion } from './release.js';

/** Names one order (a rollout and its wave, or an operator's single update). */
export const UpdateOrderId = z.string().regex(/^[0-9A-Za-z_.-]{1,64}$/);

/** relay → agent, retained: "run this release". */
export const UpdateOrderMessage = z.object({
  order_id: UpdateOrderId,
  version: ReleaseVersion,
});
export type UpdateOrderMessage = z.infer<typeof UpdateOrderMessage>;

export const UPDATE_RESULTS = ['installed', 'rolled_back', 'refused', 'failed'] as const;

/** How one order ended on the terminal. */
export const UpdateOutcome = z.object({
  order_id: UpdateOrderId,
  version: ReleaseVersion,
  /**
   * installed: running and healthy; rolled_back: installed, unhealthy, the previous
   * release runs again; refused: never installed (signature, hash, arch, size); failed:
   * never installed (download, disk, an interrupted step). Unknown values are tolerated.
   */
  result: z.union([z.enum(UPDATE_RESULTS), plainText(32).min(1)]),
  reason: plainText(500).optional(),
  at: TimestampV1,
});
export type UpdateOutcome = z.infer<typeof UpdateOutcome>;

export const UPDATE_PHASES = [
  'idle',
  'downloading',
  'verifying',
  'waiting',
  /** Ready and idle, but local transactions wait to be forwarded (docs/local-mode.md, row 19). */
  'waiting_to_forward',
  'switching',
  'trial',
  'rolling_back',
] as const;

/** agent → relay, retained: where its updates stand. */
export const UpdateStatusMessage = z.object({
  /** The release the agent runs; absent when it does not run from a release directory. */
  running_version: ReleaseVersion.optional(),
  phase: z.union([z.enum(UPDATE_PHASES), plainText(32).min(1)]),
  /** The order being worked on, while phase is not idle. */
  order_id: UpdateOrderId.optional(),
  target_version: ReleaseVersion.optional(),
  last: UpdateOutcome.optional(),
  at: TimestampV1,
});
export type UpdateStatusMessage = z.infer<typeof UpdateStatusMessage>;

/** Where an agent downloads a release's archive, under the relay's API base address (…/pos). */
export function releaseArchivePath(version: string, arch: ReleaseArch): string {
  return `/v1/fleet/releases/${encodeURIComponent(version)}/${arch}/archive`;
}

/** Where a release archive is published (POST, application/gzip), under the API base. */
export const RELEASE_PUBLISH_PATH = '/v1/fleet/releases';

/** What the relay answers for a published release. */
export const ReleaseView = z.object({
  version: ReleaseVersion,
  arch: ReleaseArch,
  archive_sha256: z.string(),
  archive_size: z.number().int(),
  files: z.number().int(),
  published_at: TimestampV1,
});
export type ReleaseView = z.infer<typeof ReleaseView>;

/** The archive's file name, as the packager writes it. */
export const releaseArchiveName = (version: string, arch: ReleaseArch): string =>
  `tps-agent-${version}-${arch}.tar.gz`;
