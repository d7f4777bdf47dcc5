/**
 * Downloads a release's archive from the relay over HTTPS with the agent's credential,
 * to a file flushed to disk. The size is capped; what the file holds is checked after
 * (update-release.ts): the transport is not what makes a release trustworthy.
 */
import fs from 'node:fs';
import path from 'node:path';
import { releaseArchivePath, type ReleaseArch } from '../protocol/index.js';
import { ReleaseProblem } from './update-release.js';

/** Largest archive downloaded: a packaged agent is ≈ 50 MB compressed, its Node.js most of it. */
export const MAX_ARCHIVE_BYTES = 256 * 1024 * 1024;
const DOWNLOAD_TIMEOUT_MS = 15 * 60_000;

export async function downloadRelease(options: {
  relay: string;
  version: string;
  arch: ReleaseArch;
  credential?: { username: string; password: string };
  file: string;
}): Promise<void> {
  const url = `${options.relay.replace(/\/$/, '')}${releaseArchivePath(options.version, options.arch)}`;
  const headers: Record<string, string> = {};
  if (options.credential) {
    const { username, password } = options.credential;
    headers.authorization = `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
  }
  let response: Response;
  try {
    response = await fetch(url, { headers, signal: AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS) });
  } catch (error) {
    throw new ReleaseProblem('failed', `the download failed: ${(error as Error).message}`);
  }
  if (!response.ok || !response.body) {
    await response.body?.cancel();
    throw new ReleaseProblem(
      'failed',
      response.status === 404
        ? `the relay has no release ${options.version} for ${options.arch}`
        : `the download failed: HTTP ${response.status}`,
    );
  }
  const declared = Number(response.headers.get('content-length'));
  if (declared > MAX_ARCHIVE_BYTES) {
    await response.body.cancel();
    throw new ReleaseProblem('refused', `the archive is larger than ${MAX_ARCHIVE_BYTES} bytes`);
  }
  fs.mkdirSync(path.dirname(options.file), { recursive: true, mode: 0o755 });
  const fd = fs.openSync(options.file, 'w', 0o600);
  try {
    let bytes = 0;
    for await (const chunk of response.body) {
      bytes += chunk.byteLength;
      if (bytes > MAX_ARCHIVE_BYTES) {
        throw new ReleaseProblem(
          'refused',
          `the archive is larger than ${MAX_ARCHIVE_BYTES} bytes`,
        );
      }
      fs.writeSync(fd, chunk);
    }
    fs.fsyncSync(fd);
  } catch (error) {
    if (error instanceof ReleaseProblem) throw error;
    throw new ReleaseProblem('failed', `the download failed: ${(error as Error).message}`);
  } finally {
    fs.closeSync(fd);
  }
}
