/**
 * Phase 4, long-poll wake-up latency: a get parked on a PROCESSING transaction is
 * answered when the simulated terminal finishes. A sample runs from the moment the relay
 * took in the terminal's result (its diagnostics channel, read in the relay's process with
 * µs precision) to the moment the whole answer has arrived here, on the same machine
 * clock: it covers the decision, the commit, the wake-up, the render and the HTTP answer.
 * The transaction's `updated_at` marks the same moment to the millisecond, truncated; a
 * sample measured from it reads up to 1 ms high, and is reported beside, as a check.
 *
 * Each terminal starts a payment every period, at its own phase: spread, the wake-ups come
 * one by one, as at a till; in a burst, every terminal starts at the same moment and all
 * their wake-ups come together. A terminal that is late skips the starts it missed instead
 * of catching up, so that a stall (a slow disk flush) does not line the terminals up.
 * Both run first against a bare server whose terminal is a timer: the machine's floor.
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

export type WakeSchedule = 'spread' | 'burst';

/** What one schedule measured against one server. */
export interface WakeRun {
  /** From the report's (or timer's) moment to the answer's arrival. */
  latency: LatencySummary;
  /** The same answers, from `updated_at` (ms, truncated). */
  fromUpdatedAt: LatencySummary;
  /** Answers without a report time, or with one after `updated_at`'s millisecond: left out. */
  unmatched: number;
  /** Gets that found the change already made when they were sent (not a wake-up). */
  notParked: number;
  errors: number;
  errorKinds: string;
  seconds: number;
  cpu: CpuShares;
}

export interface WakeResult {
  clients: number;
  delayMs: number;
  periodMs: number;
  relay: Record<WakeSchedule, WakeRun>;
  /** The same clients against bare-wake-server.ts. */
  bare: Record<WakeSchedule, WakeRun>;
  profile?: { file: string; summary: string };
}

/** A woken long poll's answer: its transaction, when it arrived and its `updated_at`. */
type Answered = [transactionId: string, receivedAt: number, updatedAt: number];

interface Tally {
  answered: Answered[];
  errors: ErrorTally;
  notParked: number;
}

/** One payment: purchase, the get that parks until the terminal is done, confirm. */
async function payOnce(pos: Pos, externalId: string, tally: Tally): Promise<void> {
  try {
    const created = await pos.purchase(externalId, NORMAL_AMOUNT, 0);
    if (created.status !== 200 || created.body?.transaction?.state !== 'PROCESSING') {
      tally.errors.add(`purchase ${created.status} ${created.body?.transaction?.state ?? ''}`);
      return;
    }
    const sentAt = epochNow();
    const read = await pos.get(externalId, 25);
    const txn = read.body?.transaction;
    if (read.status !== 200 || txn?.state !== 'AWAITING_CONFIRM') {
      tally.errors.add(`get ${read.status} ${txn?.state ?? ''}`);
      return;
    }
    const updatedAt = Date.parse(txn.updated_at);
    if (updatedAt < sentAt - 1) tally.notParked += 1;
    else tally.answered.push([txn.id, read.receivedAt, updatedAt]);
    const confirmed = await pos.confirm(externalId);
    if (confirmed.status !== 200) tally.errors.add(`confirm ${confirmed.status}`);
  } catch (error) {
    tally.errors.add(`exception ${(error as { code?: string }).code ?? String(error)}`);
    await pos.confirm(externalId, 'ABORTED').catch(() => undefined);
  }
}

/** A terminal's payments, each at the next start of its phase that has not passed. */
async function wakeLoop(
  pos: Pos,
  name: string,
  firstStart: number,
  options: BenchOptions,
  tally: Tally,
  deadline: number,
): Promise<void> {
  for (let sequence = 0; tally.answered.length < options.wakeSamples; sequence++) {
    const now = performance.now();
    const missed = Math.max(0, Math.ceil((now - firstStart) / options.wakePeriodMs));
    const start = firstStart + missed * options.wakePeriodMs;
    if (start >= deadline) return;
    await sleep(start - now);
    await payOnce(pos, `wake-${name}-${sequence}`, tally);
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

/** Runs one schedule of the wake-up clients, one per POS, until the samples are in. */
async function driveWakeups(
  server: BenchChild,
  poses: Pos[],
  schedule: WakeSchedule,
  options: BenchOptions,
): Promise<WakeRun> {
  const tally: Tally = { answered: [], errors: new ErrorTally(), notParked: 0 };
  const window = await cpuWindow(server);
  const begin = performance.now() + 10;
  const deadline = begin + MAX_SECONDS * 1000;
  await Promise.all(
    poses.map((pos, i) => {
      const phase = schedule === 'spread' ? Math.random() * options.wakePeriodMs : 0;
      return wakeLoop(pos, `${schedule}-${i}`, begin + phase, options, tally, deadline);
    }),
  );
  const { seconds, cpu } = await window.end();
  const { samples, fromUpdatedAt, unmatched } = wakeSamples(
    tally.answered,
    await server.reportTimes(),
  );
  return {
    latency: samples.summary(),
    fromUpdatedAt: fromUpdatedAt.summary(),
    unmatched,
    notParked: tally.notParked,
    errors: tally.errors.total,
    errorKinds: tally.errors.describe(),
    seconds,
    cpu,
  };
}

async function bothSchedules(server: BenchChild, poses: Pos[], options: BenchOptions) {
  const spread = await driveWakeups(server, poses, 'spread', options);
  const burst = await driveWakeups(server, poses, 'burst', options);
  return { spread, burst };
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
    return await bothSchedules(server, poses, options);
  } finally {
    await pool.close();
    await server.stop();
  }
}

export async function runWakeup(options: BenchOptions): Promise<WakeResult> {
  if (options.wakePeriodMs <= options.wakeDelayMs) {
    throw new Error('--wake-period-ms must be longer than --wake-delay-ms');
  }
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
    const runs = await bothSchedules(relay.process, poses, options);
    const profile = options.cpuProfDir
      ? await writeProfile(relay.process, options.cpuProfDir, 'relay-wakeup')
      : undefined;
    return {
      clients: options.wakeClients,
      delayMs: options.wakeDelayMs,
      periodMs: options.wakePeriodMs,
      relay: runs,
      bare,
      ...(profile ? { profile } : {}),
    };
  } finally {
    await pool.close();
    await relay.dispose();
  }
}
