/**
 * Phase 4, long-poll wake-up latency: a get parked on a PROCESSING transaction is
 * answered when the simulated terminal finishes. The state change's time is the
 * transaction's `updated_at` (set by the relay when it takes in the terminal's report,
 * before the commit; ms precision, truncated); the answer's time is taken on arrival,
 * on the same machine clock. So a sample covers commit, wake-up, render and the HTTP
 * answer, and reads up to 1 ms high from the truncation.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
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
  latency: LatencySummary;
  /** Gets that found the change already made when they were sent (not a wake-up). */
  notParked: number;
  errors: number;
  errorKinds: string;
  cpu: CpuShares;
  profile?: { file: string; summary: string };
}

async function wakeLoop(
  pos: Pos,
  client: number,
  options: BenchOptions,
  samples: LatencyRecorder,
  errors: ErrorTally,
  counts: { notParked: number },
  deadline: number,
): Promise<void> {
  // Spread the clients over one delay so that wake-ups do not all come in one burst.
  await sleep(Math.random() * options.wakeDelayMs);
  let sequence = 0;
  while (samples.count < options.wakeSamples && performance.now() < deadline) {
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
      const changedAt = Date.parse(txn.updated_at);
      if (changedAt < sentAt - 1) counts.notParked += 1;
      else samples.record(read.receivedAt - changedAt);
      const confirmed = await pos.confirm(externalId);
      if (confirmed.status !== 200) errors.add(`confirm ${confirmed.status}`);
    } catch (error) {
      errors.add(`exception ${(error as { code?: string }).code ?? String(error)}`);
      await pos.confirm(externalId, 'ABORTED').catch(() => undefined);
      await sleep(10);
    }
  }
}

export async function runWakeup(options: BenchOptions): Promise<WakeResult> {
  const relay = await startRelayChild({ simulatorDelayMs: options.wakeDelayMs });
  const pool = new Pool(relay.origin, { connections: options.wakeClients, pipelining: 1 });
  try {
    const simulators = await createSimulators(pool, relay.account, options.wakeClients);
    // The account credential reaches every terminal: one secret check instead of one each.
    const poses = simulators.map((s) => new Pos(pool, s.terminal_id, relay.account));
    const samples = new LatencyRecorder();
    const errors = new ErrorTally();
    const counts = { notParked: 0 };
    if (options.cpuProfDir) await relay.process.profileStart();
    const window = await cpuWindow(relay.process);
    const deadline = performance.now() + MAX_SECONDS * 1000;
    await Promise.all(
      poses.map((pos, i) => wakeLoop(pos, i, options, samples, errors, counts, deadline)),
    );
    const { seconds, cpu } = await window.end();
    const profile = options.cpuProfDir
      ? await writeProfile(relay.process, options.cpuProfDir, 'relay-wakeup')
      : undefined;
    return {
      clients: options.wakeClients,
      delayMs: options.wakeDelayMs,
      seconds,
      latency: samples.summary(),
      notParked: counts.notParked,
      errors: errors.total,
      errorKinds: errors.describe(),
      cpu,
      ...(profile ? { profile } : {}),
    };
  } finally {
    await pool.close();
    await relay.dispose();
  }
}
