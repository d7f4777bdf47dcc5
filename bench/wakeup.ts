/**
 * Phase 4, long-poll wake-up latency: a get parked on a PROCESSING transaction is
 * answered when the simulated terminal finishes. A sample runs from the moment the relay
 * took in the terminal's result (its diagnostics channel, read in the relay's process with
 * µs precision) to the moment the whole answer has arrived here, on the same machine
 * clock: it covers the decision, the commit, the wake-up, the render and the HTTP answer.
 * The transaction's `updated_at` marks the same moment to the millisecond, truncated; a
 * sample measured from it reads up to 1 ms high, and is reported beside, as a check.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import { BenchChild } from './child.js';
import { cpuWindow, type CpuShares } from './machine.js';
import type { BenchOptions } from './options.js';
import { Pos, createSimulators, epochNow } from './pos-api.js';
import { writeProfile } from './pos-clients.js';
import { startRelayChild } from './relay-child.js';
import { ErrorTally, LatencyRecorder, type LatencySummary } from './stats.js';

/** An amount with no trigger: succeeds after the simulator's configured delay. */
const NORMAL_AMOUNT = 1_000;
const MAX_SECONDS = 60;

export interface WakeResult {
  clients: number;
  delayMs: number;
  seconds: number;
  /** From the relay's taking in the result to the answer's arrival. */
  latency: LatencySummary;
  /** The same answers, from `updated_at` (ms, truncated). */
  fromUpdatedAt: LatencySummary;
  /** Answers without a report time, or with one after `updated_at`'s millisecond: left out. */
  unmatched: number;
  /** Gets that found the change already made when they were sent (not a wake-up). */
  notParked: number;
  errors: number;
  errorKinds: string;
  cpu: CpuShares;
  /** The same clients against a bare server whose "terminal" is a timer. */
  bare: { latency: LatencySummary; unmatched: number; errors: number; cpu: CpuShares };
  profile?: { file: string; summary: string };
}

/** A woken long poll's answer: its transaction, when it arrived and its `updated_at`. */
type Answered = [transactionId: string, receivedAt: number, updatedAt: number];

async function wakeLoop(
  pos: Pos,
  client: number,
  options: BenchOptions,
  answered: Answered[],
  errors: ErrorTally,
  counts: { notParked: number },
  deadline: number,
): Promise<void> {
  // Spread the clients over one delay so that wake-ups do not all come in one burst.
  await sleep(Math.random() * options.wakeDelayMs);
  let sequence = 0;
  while (answered.length < options.wakeSamples && performance.now() < deadline) {
    const externalId = `wake-${client}-${sequence++}`;
    try {
      const created = await pos.purchase(externalId, NORMAL_AMOUNT, 0);
      if (created.status !== 200 || created.body?.transaction?.state !== 'PROCESSING') {
        errors.add(`purchase ${created.status} ${created.body?.transaction?.state ?? ''}`);
        continue;
      }
      const sentAt = epochNow();
      const read = await pos.get(externalId, 25);
      const txn = read.body?.transaction;
      if (read.status !== 200 || txn?.state !== 'AWAITING_CONFIRM') {
        errors.add(`get ${read.status} ${txn?.state ?? ''}`);
        continue;
      }
      const updatedAt = Date.parse(txn.updated_at);
      if (updatedAt < sentAt - 1) counts.notParked += 1;
      else answered.push([txn.id, read.receivedAt, updatedAt]);
      const confirmed = await pos.confirm(externalId);
      if (confirmed.status !== 200) errors.add(`confirm ${confirmed.status}`);
    } catch (error) {
      errors.add(`exception ${(error as { code?: string }).code ?? String(error)}`);
      await pos.confirm(externalId, 'ABORTED').catch(() => undefined);
      await sleep(10);
    }
  }
}

/**
 * Each answer's wake-up from its report's time. `updated_at` is taken after the report
 * and truncated, so a report time at or past the next millisecond means the two
 * processes' clocks disagree: such an answer, or one without a report time, is left out
 * and counted.
 */
function wakeSamples(answered: Answered[], reportTimes: Map<string, number>) {
  const samples = new LatencyRecorder();
  const fromUpdatedAt = new LatencyRecorder();
  let unmatched = 0;
  for (const [transactionId, receivedAt, updatedAt] of answered) {
    const takenAt = reportTimes.get(transactionId);
    if (takenAt === undefined || takenAt >= updatedAt + 1) {
      unmatched += 1;
      continue;
    }
    samples.record(receivedAt - takenAt);
    fromUpdatedAt.record(receivedAt - updatedAt);
  }
  return { samples, fromUpdatedAt, unmatched };
}

/** What the wake-up clients measured against one server. */
interface WakeRun {
  answered: Answered[];
  errors: ErrorTally;
  notParked: number;
  seconds: number;
  cpu: CpuShares;
}

/** Runs the wake-up clients, one per POS, until the samples are in. */
async function driveWakeups(
  server: BenchChild,
  poses: Pos[],
  options: BenchOptions,
): Promise<WakeRun> {
  const answered: Answered[] = [];
  const errors = new ErrorTally();
  const counts = { notParked: 0 };
  const window = await cpuWindow(server);
  const deadline = performance.now() + MAX_SECONDS * 1000;
  await Promise.all(
    poses.map((pos, i) => wakeLoop(pos, i, options, answered, errors, counts, deadline)),
  );
  const { seconds, cpu } = await window.end();
  return { answered, errors, notParked: counts.notParked, seconds, cpu };
}

/**
 * The same clients against bare-wake-server.ts: a timer instead of a terminal, nothing
 * committed. Its wake-ups are the floor this machine puts under the relay's.
 */
async function runBareWakeups(options: BenchOptions): Promise<WakeResult['bare']> {
  const server = await BenchChild.start(new URL('./bare-wake-server.js', import.meta.url), {
    env: { BENCH_BARE_WAKE_DELAY_MS: String(options.wakeDelayMs) },
  });
  const pool = new Pool(server.origin, { connections: options.wakeClients, pipelining: 1 });
  try {
    const credential = { username: 'bare', password: 'bare' };
    const poses = Array.from(
      { length: options.wakeClients },
      (_, i) => new Pos(pool, `t-bare-${i}`, credential),
    );
    const run = await driveWakeups(server, poses, options);
    const { samples, unmatched } = wakeSamples(run.answered, await server.reportTimes());
    return {
      latency: samples.summary(),
      unmatched,
      errors: run.errors.total,
      cpu: run.cpu,
    };
  } finally {
    await pool.close();
    await server.stop();
  }
}

export async function runWakeup(options: BenchOptions): Promise<WakeResult> {
  const bare = await runBareWakeups(options);
  const relay = await startRelayChild({
    simulatorDelayMs: options.wakeDelayMs,
    env: { BENCH_REPORT_TIMES: '1' },
  });
  const pool = new Pool(relay.origin, { connections: options.wakeClients, pipelining: 1 });
  try {
    const simulators = await createSimulators(pool, relay.account, options.wakeClients);
    // The account credential reaches every terminal: one secret check instead of one each.
    const poses = simulators.map((s) => new Pos(pool, s.terminal_id, relay.account));
    if (options.cpuProfDir) await relay.process.profileStart();
    const run = await driveWakeups(relay.process, poses, options);
    const { samples, fromUpdatedAt, unmatched } = wakeSamples(
      run.answered,
      await relay.process.reportTimes(),
    );
    const profile = options.cpuProfDir
      ? await writeProfile(relay.process, options.cpuProfDir, 'relay-wakeup')
      : undefined;
    return {
      clients: options.wakeClients,
      delayMs: options.wakeDelayMs,
      seconds: run.seconds,
      latency: samples.summary(),
      fromUpdatedAt: fromUpdatedAt.summary(),
      unmatched,
      notParked: run.notParked,
      errors: run.errors.total,
      errorKinds: run.errors.describe(),
      cpu: run.cpu,
      bare,
      ...(profile ? { profile } : {}),
    };
  } finally {
    await pool.close();
    await relay.dispose();
  }
}
