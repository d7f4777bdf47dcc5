/**
 * The thread that checks uploaded release archives for archive-checker.ts, one at a time,
 * so that inflating and hashing a hostile archive holds this thread and never the relay's
 * event loop.
 */
import { parentPort } from 'node:worker_threads';
import { ReleaseArchiveError, checkReleaseArchive } from './archive.js';
import type { ArchiveCheckAnswer, ArchiveCheckRequest } from './archive-checker.js';

const port = parentPort!;
port.on('message', (request: ArchiveCheckRequest) => {
  void checkReleaseArchive(request.file, request.publicKeyPem, request.limits).then(
    (checked) => port.postMessage({ ok: true, checked } satisfies ArchiveCheckAnswer),
    (error: unknown) =>
      port.postMessage(
        (error instanceof ReleaseArchiveError
          ? { ok: false, code: error.code, message: error.message }
          : { ok: false, message: String(error) }) satisfies ArchiveCheckAnswer,
      ),
  );
});
