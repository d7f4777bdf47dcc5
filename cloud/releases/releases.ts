/**
 * Agent releases on the relay (docs/fleet.md, "Releases"): an account publishes an
 * archive, which is checked whole (archive.ts) against the relay's release key before it
 * is kept: the file in the release folder, named by its SHA-256, and its row in the store.
 * Agents of the account's terminals download it; nobody else sees it.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { Clock } from '../../common/clock.js';
import type { ReleaseArch, ReleaseView } from '../../protocol/index.js';
import type { Principal } from '../accounts/principal.js';
import { ApiError } from '../errors.js';
import type { ReleaseRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import {
  DEFAULT_RELEASE_LIMITS,
  ReleaseArchiveError,
  checkReleaseArchive,
  type ReleaseArchiveLimits,
} from './archive.js';

export interface ReleasesOptions {
  store: Pick<Store, 'addRelease' | 'findRelease'>;
  /** Where archives are kept (TPS_RELEASE_DIR); shared by every relay of a deployment. */
  dir: string;
  /** PEM of the ed25519 key releases must be signed with (TPS_RELEASE_PUBLIC_KEY). */
  publicKeyPem: string | undefined;
  limits?: ReleaseArchiveLimits;
  clock: Clock;
}

export class Releases {
  private readonly limits: ReleaseArchiveLimits;

  constructor(private readonly options: ReleasesOptions) {
    this.limits = options.limits ?? DEFAULT_RELEASE_LIMITS;
  }

  /** Checks and keeps an uploaded archive; the account credential alone may publish. */
  async publish(principal: Principal, body: Readable): Promise<ReleaseView> {
    if (principal.terminalId) {
      body.resume();
      throw new ApiError('FORBIDDEN', 'only the account credential may publish releases');
    }
    const { publicKeyPem, dir } = this.options;
    if (!publicKeyPem) {
      body.resume();
      throw new ApiError(
        'FORBIDDEN',
        'this relay has no release public key (TPS_RELEASE_PUBLIC_KEY): it accepts no release',
      );
    }
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const upload = path.join(dir, `upload-${randomUUID()}.tar.gz`);
    try {
      await this.receive(body, upload);
      let checked;
      try {
        checked = await checkReleaseArchive(upload, publicKeyPem, this.limits);
      } catch (error) {
        if (error instanceof ReleaseArchiveError) throw new ApiError(error.code, error.message);
        throw error;
      }
      const { manifest } = checked;
      const file = `${checked.archiveSha256}.tar.gz`;
      fs.renameSync(upload, path.join(dir, file));
      const record: ReleaseRecord = {
        accountId: principal.accountId,
        version: manifest.version,
        arch: manifest.arch,
        manifest: checked.manifestBytes.toString('utf8'),
        signature: checked.signature,
        archiveSha256: checked.archiveSha256,
        archiveSize: checked.archiveSize,
        file,
        publishedAt: this.options.clock.now().toISOString(),
      };
      if (!(await this.options.store.addRelease(record))) {
        throw new ApiError(
          'RELEASE_EXISTS',
          `release ${manifest.version} for ${manifest.arch} is published already; publish a new version`,
        );
      }
      return view(record, manifest.files.length);
    } finally {
      fs.rmSync(upload, { force: true });
    }
  }

  /** The archive of a release the principal's account published. */
  async archive(
    principal: Principal,
    version: string,
    arch: ReleaseArch,
  ): Promise<{ file: string; size: number; sha256: string }> {
    const record = await this.options.store.findRelease(principal.accountId, version, arch);
    const file = record && path.join(this.options.dir, record.file);
    if (!record || !file || !fs.existsSync(file)) {
      throw new ApiError('RELEASE_NOT_FOUND', `no release ${version} for ${arch}`);
    }
    return { file, size: record.archiveSize, sha256: record.archiveSha256 };
  }

  /** Writes the body to `file`, refusing it past the archive limit. */
  private async receive(body: Readable, file: string): Promise<void> {
    const fd = fs.openSync(file, 'wx', 0o600);
    try {
      let bytes = 0;
      for await (const chunk of body as AsyncIterable<Buffer>) {
        bytes += chunk.length;
        if (bytes > this.limits.maxArchiveBytes) {
          body.destroy();
          throw new ApiError(
            'BODY_TOO_LARGE',
            `a release archive may hold at most ${this.limits.maxArchiveBytes} bytes`,
          );
        }
        fs.writeSync(fd, chunk);
      }
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
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
