/**
 * Checks release archives (archive.ts) on threads of their own, a bounded number at once:
 * inflating an archive of hundreds of MiB takes seconds of CPU, which must never be the
 * relay's event loop. Beyond the bound, 503 SERVICE_BUSY at once. A thread is kept for
 * the next check; one that dies (out of memory) or passes the deadline fails its check and
 * is ended.
 */
import type { Worker } from 'node:worker_threads';
import { withDeadline } from '../../common/deadline.js';
import { ApiError } from '../errors.js';
import { startThread } from '../threads.js';
import {
  ReleaseArchiveError,
  type CheckedRelease,
  type ReleaseArchiveLimits,
  type ReleaseArchiveProblem,
} from './archive.js';

/** An archive to check, and the thread's verdict. */
export interface ArchiveCheckRequest {
  file: string;
  publicKeyPem: string;
  limits: ReleaseArchiveLimits;
}
export type ArchiveCheckAnswer =
  | { ok: true; checked: CheckedRelease }
  | { ok: false; code?: ReleaseArchiveProblem; message: string };

/**
 * An archive at the limits is checked in seconds; a thread still at it after this is
 * stuck, and must not hold its place for good.
 */
export const RELEASE_CHECK_DEADLINE_MS = 120_000;

export class ReleaseArchiveChecker {
  private readonly idle: Worker[] = [];
  private readonly busy = new Set<Worker>();
  private closed = false;

  /** `maxChecks` archives are checked at once, each on its own thread. */
  constructor(
    private readonly maxChecks: number,
    private readonly onThreadFault: (error: Error) => void = () => {},
    private readonly deadlineMs = RELEASE_CHECK_DEADLINE_MS,
  ) {}

  /** The checked release; ReleaseArchiveError when it is none; ApiError when busy. */
  async check(request: ArchiveCheckRequest): Promise<CheckedRelease> {
    if (this.busy.size >= this.maxChecks || this.closed) {
      throw new ApiError('SERVICE_BUSY', 'release archives are being checked; repeat shortly', {
        'Retry-After': '5',
      });
    }
    const worker = this.idle.pop() ?? startCheckThread();
    this.busy.add(worker);
    let reusable = false;
    try {
      const answer = await withDeadline(
        ask(worker, request),
        this.deadlineMs,
        `the release check took more than ${this.deadlineMs} ms`,
      );
      reusable = true;
      if (answer.ok) {
        const { checked } = answer;
        // Structured cloning turns a Buffer into a Uint8Array.
        return { ...checked, manifestBytes: Buffer.from(checked.manifestBytes) };
      }
      if (answer.code) throw new ReleaseArchiveError(answer.code, answer.message);
      throw new Error(`the release archive check failed: ${answer.message}`);
    } catch (error) {
      if (reusable || error instanceof ReleaseArchiveError) throw error;
      this.onThreadFault(error as Error);
      throw new ReleaseArchiveError(
        'RELEASE_INVALID',
        'the archive could not be checked within the relay’s limits',
      );
    } finally {
      this.busy.delete(worker);
      if (reusable && !this.closed) this.idle.push(worker);
      else void worker.terminate();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const workers = [...this.idle, ...this.busy];
    this.idle.length = 0;
    await Promise.all(workers.map((worker) => worker.terminate()));
  }
}

/** One answer of `worker`; rejects when it dies first. */
function ask(worker: Worker, request: ArchiveCheckRequest): Promise<ArchiveCheckAnswer> {
  return new Promise((resolve, reject) => {
    const settle = () => {
      worker.off('message', onMessage);
      worker.off('error', onError);
      worker.off('exit', onExit);
    };
    const onMessage = (answer: ArchiveCheckAnswer) => {
      settle();
      resolve(answer);
    };
    const onError = (error: Error) => {
      settle();
      reject(error);
    };
    const onExit = (code: number) => {
      settle();
      reject(new Error(`the check thread exited with code ${code}`));
    };
    worker.on('message', onMessage);
    worker.on('error', onError);
    worker.on('exit', onExit);
    worker.ref();
    worker.postMessage(request);
  }).finally(() => worker.unref()) as Promise<ArchiveCheckAnswer>;
}

/**
 * The check holds at most two manifests (4 MiB each) and a hash per file (20,000): far
 * below this memory; more is an attack, which ends the thread, not the relay.
 */
function startCheckThread(): Worker {
  const worker = startThread('./archive-check-thread.js', import.meta.url, {
    resourceLimits: { maxYoungGenerationSizeMb: 16, maxOldGenerationSizeMb: 128 },
  });
  worker.unref();
  return worker;
}
