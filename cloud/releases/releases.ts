/**
 * Agent releases on the relay (docs/fleet.md, "Releases"): the operator publishes an
 * archive, which is checked whole (archive.ts, on a thread: archive-checker.ts) against
 * the relay's release key before it is kept: its row in the store (under the operator's
 * account), then the file in the release folder, named by its SHA-256. Every terminal's
 * agent may download it. Nothing of a refused or failed upload stays in the folder; the
 * uploads at once and the folder's size are bounded (docs/security.md, "Limits").
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { Clock } from '../../common/clock.js';
import { ReleaseManifest, type ReleaseArch, type ReleaseView } from '../../protocol/index.js';
import type { Principal } from '../accounts/principal.js';
import { ApiError } from '../errors.js';
import type { ReleaseRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import {
  DEFAULT_RELEASE_LIMITS,
  ReleaseArchiveError,
  type ReleaseArchiveLimits,
} from './archive.js';
import { ReleaseArchiveChecker } from './archive-checker.js';

export interface ReleasesOptions {
  store: Pick<Store, 'addRelease' | 'findRelease' | 'listReleases'>;
  /** The operator's account: releases are relay-wide, kept as its (docs/tenants.md). */
  operatorAccountId: string;
  /** Where archives are kept (TPS_RELEASE_DIR); shared by every relay of a deployment. */
  dir: string;
  /** PEM of the ed25519 key releases must be signed with (TPS_RELEASE_PUBLIC_KEY). */
  publicKeyPem: string | undefined;
  limits?: ReleaseArchiveLimits;
  /** Uploads received or checked at once by this relay (TPS_RELEASE_MAX_UPLOADS). */
  maxUploads?: number;
  /** What the release folder may hold, uploads included (TPS_RELEASE_MAX_DISK_BYTES). */
  maxDiskBytes?: number;
  clock: Clock;
  /** A check thread that died (a fault of the relay's bounds, not of the archive). */
  onCheckFault?: (error: Error) => void;
}

export const DEFAULT_RELEASE_MAX_UPLOADS = 2;
export const DEFAULT_RELEASE_MAX_DISK_BYTES = 4 * 1024 ** 3;

export class Releases {
  private readonly limits: ReleaseArchiveLimits;
  private readonly maxUploads: number;
  private readonly maxDiskBytes: number;
  private readonly checker: ReleaseArchiveChecker;
  private uploads = 0;
  /** This relay's uploads being received: their files, and the bytes written so far. */
  private readonly receiving = new Map<string, number>();

  constructor(private readonly options: ReleasesOptions) {
    this.limits = options.limits ?? DEFAULT_RELEASE_LIMITS;
    this.maxUploads = options.maxUploads ?? DEFAULT_RELEASE_MAX_UPLOADS;
    this.maxDiskBytes = options.maxDiskBytes ?? DEFAULT_RELEASE_MAX_DISK_BYTES;
    this.checker = new ReleaseArchiveChecker(this.maxUploads, options.onCheckFault);
  }

  /** Checks and keeps an uploaded archive; the operator alone publishes. */
  async publish(principal: Principal, body: Readable): Promise<ReleaseView> {
    if (principal.role !== 'operator') {
      body.resume();
      throw new ApiError(
        'FORBIDDEN',
        "releases are the operator's: only an operator credential publishes them",
      );
    }
    const { publicKeyPem, dir } = this.options;
    if (!publicKeyPem) {
      body.resume();
      throw new ApiError(
        'FORBIDDEN',
        'this relay has no release public key (TPS_RELEASE_PUBLIC_KEY): it accepts no release',
      );
    }
    if (this.uploads >= this.maxUploads) {
      body.resume();
      throw new ApiError(
        'SERVICE_BUSY',
        `${this.maxUploads} release uploads are in progress on this relay; repeat shortly`,
        { 'Retry-After': '5' },
      );
    }
    this.uploads += 1;
    const upload = path.join(dir, `upload-${randomUUID()}.tar.gz`);
    try {
      await fs.promises.mkdir(dir, { recursive: true, mode: 0o700 });
      await this.receive(body, upload);
      let checked;
      try {
        checked = await this.checker.check({ file: upload, publicKeyPem, limits: this.limits });
      } catch (error) {
        if (error instanceof ReleaseArchiveError) throw new ApiError(error.code, error.message);
        throw error;
      }
      const { manifest } = checked;
      const record: ReleaseRecord = {
        accountId: this.options.operatorAccountId,
        version: manifest.version,
        arch: manifest.arch,
        manifest: checked.manifestBytes.toString('utf8'),
        signature: checked.signature,
        archiveSha256: checked.archiveSha256,
        archiveSize: checked.archiveSize,
        file: `${checked.archiveSha256}.tar.gz`,
        publishedAt: this.options.clock.now().toISOString(),
      };
      // The row first: a refused re-publish leaves the folder as it was. Another release's
      // identical archive has the same name and the same bytes: replacing it is harmless.
      if (!(await this.options.store.addRelease(record))) {
        await this.restoreMissing(record, upload);
        throw new ApiError(
          'RELEASE_EXISTS',
          `release ${manifest.version} for ${manifest.arch} is published already; publish a new version`,
        );
      }
      await fs.promises.rename(upload, path.join(dir, record.file));
      return view(record, manifest.files.length);
    } finally {
      this.uploads -= 1;
      await fs.promises.rm(upload, { force: true });
    }
  }

  /** Every published release, newest first; the operator's alone, as publishing is. */
  async list(principal: Principal): Promise<ReleaseView[]> {
    if (principal.role !== 'operator') {
      throw new ApiError(
        'FORBIDDEN',
        "releases are the operator's: only an operator credential lists them",
      );
    }
    const records = await this.options.store.listReleases(this.options.operatorAccountId);
    return records.map((record) =>
      view(record, ReleaseManifest.parse(JSON.parse(record.manifest)).files.length),
    );
  }

  /** The archive of a published release (who may have it, the route decides). */
  async archive(
    version: string,
    arch: ReleaseArch,
  ): Promise<{ file: string; size: number; sha256: string }> {
    const { store, operatorAccountId } = this.options;
    const record = await store.findRelease(operatorAccountId, version, arch);
    const file = record && path.join(this.options.dir, record.file);
    if (!record || !file || !fs.existsSync(file)) {
      throw new ApiError('RELEASE_NOT_FOUND', `no release ${version} for ${arch}`);
    }
    return { file, size: record.archiveSize, sha256: record.archiveSha256 };
  }

  /**
   * Puts a published release's archive back when the same bytes come again and its file is
   * missing: a relay that died between the row's commit and the rename left the row alone.
   */
  private async restoreMissing(sent: ReleaseRecord, upload: string): Promise<void> {
    const kept = await this.options.store.findRelease(sent.accountId, sent.version, sent.arch);
    if (kept?.archiveSha256 !== sent.archiveSha256) return;
    const file = path.join(this.options.dir, kept.file);
    if (!fs.existsSync(file)) await fs.promises.rename(upload, file);
  }

  /** Ends the check threads. */
  close(): Promise<void> {
    return this.checker.close();
  }

  /**
   * Writes the body to `file`, refusing it past the archive limit or when the folder would
   * hold more than its bound; the rest of a refused body is read and dropped, so that the
   * answer reaches the client.
   */
  private async receive(body: Readable, file: string): Promise<void> {
    const kept = await this.folderBytes();
    const handle = await fs.promises.open(file, 'wx', 0o600);
    this.receiving.set(file, 0);
    try {
      let bytes = 0;
      for await (const chunk of body.iterator({
        destroyOnReturn: false,
      }) as AsyncIterable<Buffer>) {
        bytes += chunk.length;
        this.receiving.set(file, bytes);
        if (bytes > this.limits.maxArchiveBytes) {
          throw new ApiError(
            'BODY_TOO_LARGE',
            `a release archive may hold at most ${this.limits.maxArchiveBytes} bytes`,
          );
        }
        if (kept + this.receivingBytes() > this.maxDiskBytes) {
          throw new ApiError(
            'RELEASE_STORAGE_FULL',
            `the relay's releases may take ${this.maxDiskBytes} bytes (TPS_RELEASE_MAX_DISK_BYTES) and this archive does not fit`,
          );
        }
        await handle.write(chunk);
      }
      await handle.sync();
    } catch (error) {
      body.resume();
      // A client that went away (or was timed out) is no fault of the relay's.
      if (!(error instanceof ApiError) && body.errored) {
        throw new ApiError('INVALID_REQUEST', 'the upload ended before the whole archive arrived');
      }
      throw error;
    } finally {
      this.receiving.delete(file);
      await handle.close();
    }
  }

  private receivingBytes(): number {
    let bytes = 0;
    for (const written of this.receiving.values()) bytes += written;
    return bytes;
  }

  /** What the folder holds, but for this relay's uploads being received (counted apart). */
  private async folderBytes(): Promise<number> {
    const { dir } = this.options;
    let bytes = 0;
    for (const name of await fs.promises.readdir(dir)) {
      const file = path.join(dir, name);
      if (this.receiving.has(file)) continue;
      const stat = await fs.promises.stat(file).catch(() => undefined);
      if (stat?.isFile()) bytes += stat.size;
    }
    return bytes;
  }
}

function view(record: ReleaseRecord, files: number): ReleaseView {
  return {
    version: record.version,
    arch: record.arch as ReleaseArch,
    archive_sha256: record.archiveSha256,
    archive_size: record.archiveSize,
    files,
    published_at: record.publishedAt,
  };
}
