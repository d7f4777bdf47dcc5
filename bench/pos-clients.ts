/**
 * Phase 2, the product: POS clients, each driving its own simulated terminal, loop
 * complete purchase flows (purchase → get while PROCESSING → confirm SUCCESS) against a
 * relay in a child process, over one keep-alive undici Pool (pipelining 1).
 */
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import type { BenchChild } from './child.js';
import { cpuWindow, type CpuShares } from './machine.js';
import type { BenchOptions } from './options.js';
import { Pos, createSimulators, type TransactionAnswer } from './pos-api.js';
import { summarizeProfile, type CpuProfile } from './profile-summary.js';
import { startRelayChild, type RelayChild } from './relay-child.js';
import { ErrorTally, LatencyRecorder, type LatencySummary } from './stats.js';

/** The simulator's trigger amount that succeeds at once (docs/simulator.md). */
export const INSTANT_SUCCESS = 100_002;
const WAIT_SECONDS = 25;

export const REQUEST_TYPES = ['purchase', 'get', 'confirm'] as const;
type RequestType = (typeof REQUEST_TYPES)[number];

export interface FlowsResult {
  clients: number;
  seconds: number;
  flows: number;
  flowsPerSecond: number;
  requests: number;
  requestsPerSecond: number;
  latency: Record<RequestType | 'flow', LatencySummary>;
  errors: number;
  errorKinds: string;
  /** RSS after setup (terminals created, garbage collected), before any load. */
  idleRss: number;
  /** Largest RSS sampled (every 100 ms) during warm-up and the measured window. */
  peakRss: number;
  /** V8 heap in use before the load and after it, both right after a full GC. */
  idleHeap: number;
  heapAfter: number;
  /** CPU use over the measured window: relay (server), POS clients, everything else. */
  cpu: CpuShares;
  /** Reports the relay took in per flow over the window, where it counts them. */
  reportsPerFlow?: number;
  /** The relay's CPU profile of the measured window, when asked for, and its top entries. */
  profile?: { file: string; summary: string };
}

export class Tally {
  readonly latency = {
    purchase: new LatencyRecorder(),
    get: new LatencyRecorder(),
    confirm: new LatencyRecorder(),
    flow: new LatencyRecorder(),
  };
  readonly errors = new ErrorTally();
  flows = 0;
  requests = 0;

  /** Records an answer; true when it is a 200 with a transaction in it. */
  answer(type: RequestType, answer: TransactionAnswer): boolean {
    this.requests += 1;
    this.latency[type].record(answer.ms);
    if (answer.status === 200 && answer.body?.transaction) return true;
    this.errors.add(`${type} ${answer.status} ${answer.body?.error?.code ?? ''}`.trim());
    return false;
  }
}

const tag = Date.now().toString(36);

async function oneFlow(pos: Pos, externalId: string, tally: Tally): Promise<void> {
  const started = performance.now();
  const created = await pos.purchase(externalId, INSTANT_SUCCESS, WAIT_SECONDS);
  if (!tally.answer('purchase', created)) return;
  let state = created.body!.transaction!.state;
  while (state === 'PROCESSING') {
    const read = await pos.get(externalId, WAIT_SECONDS);
    if (!tally.answer('get', read)) return;
    state = read.body!.transaction!.state;
  }
  if (state !== 'AWAITING_CONFIRM') {
    tally.errors.add(`purchase ended in ${state}`);
    return;
  }
  const confirmed = await pos.confirm(externalId);
  if (!tally.answer('confirm', confirmed)) return;
  if (confirmed.body!.transaction!.state !== 'CONFIRMED') {
    tally.errors.add(`confirm answered ${confirmed.body!.transaction!.state}`);
    return;
  }
  tally.flows += 1;
  tally.latency.flow.record(performance.now() - started);
}

/**
 * One POS: complete flows back to back until the deadline (performance.now() ms), or one
 * flow every `periodMs` (started at a random point of the first period) when given.
 */
async function posLoop(
  pos: Pos,
  client: number,
  deadline: number,
  tally: Tally,
  phase: string,
  periodMs?: number,
) {
  let sequence = 0;
  let next = performance.now() + (periodMs ? Math.random() * periodMs : 0);
  while (performance.now() < deadline) {
    if (periodMs) {
      const rest = next - performance.now();
      if (rest > 0) await sleep(rest);
      next += periodMs;
      if (performance.now() >= deadline) break;
    }
    const externalId = `${phase}-${tag}-${client}-${sequence++}`;
    const errorsBefore = tally.errors.total;
    try {
      await oneFlow(pos, externalId, tally);
    } catch (error) {
      tally.errors.add(`exception ${(error as { code?: string }).code ?? String(error)}`);
    }
    if (tally.errors.total > errorsBefore) {
      // Leave the terminal free for the next flow, and do not spin on a failing relay.
      await pos.confirm(externalId, 'ABORTED').catch(() => undefined);
      await sleep(10);
    }
  }
}

/** Every POS loops flows for `seconds`; with `flowsPerSecond`, paced to that total rate. */
export async function drive(
  poses: Pos[],
  seconds: number,
  tally: Tally,
  phase: string,
  flowsPerSecond?: number,
) {
  const deadline = performance.now() + seconds * 1000;
  const periodMs = flowsPerSecond ? (poses.length / flowsPerSecond) * 1000 : undefined;
  await Promise.all(poses.map((pos, i) => posLoop(pos, i, deadline, tally, phase, periodMs)));
}

export async function runPurchaseFlows(options: BenchOptions): Promise<FlowsResult> {
  const relay = await startRelayChild({
    simulatorDelayMs: 2000,
    env: { BENCH_COUNT_REPORTS: '1' },
  });
  const pool = new Pool(relay.origin, {
    connections: options.clients,
    pipelining: 1,
    keepAliveTimeout: 60_000,
  });
  try {
    const simulators = await createSimulators(pool, relay.account, options.clients);
    const poses = simulators.map((s) => new Pos(pool, s.terminal_id, s));
    return await measureFlows(relay, poses, options, {
      profile: options.cpuProfDir !== undefined,
    });
  } finally {
    await pool.close();
    await relay.dispose();
  }
}

/**
 * Warm-up, then flows for `options.seconds` from every POS at once: the measurement of
 * the flows phase, shared with the agent-path phase (whose terminals are agents in the
 * `fleet` child, whose CPU is then counted apart).
 */
export async function measureFlows(
  relay: RelayChild,
  poses: Pos[],
  options: BenchOptions,
  extra: { profile?: boolean; fleet?: BenchChild; phase?: string } = {},
): Promise<FlowsResult> {
  const idle = await relay.process.sample({ gc: true, resetPeak: true });

  // Warm-up: JIT, the first check of each terminal credential (then cached), sockets.
  const warmup = new Tally();
  await drive(poses, options.warmupSeconds, warmup, `warm${extra.phase ?? ''}`);
  if (warmup.flows === 0)
    throw new Error(`no flow completed in warm-up: ${warmup.errors.describe()}`);

  if (extra.profile && options.cpuProfDir) await relay.process.profileStart();
  const tally = new Tally();
  const window = await cpuWindow(relay.process, extra.fleet);
  await drive(poses, options.seconds, tally, `flow${extra.phase ?? ''}`);
  const { seconds, cpu, first, sample: loaded } = await window.end();
  const reportsTaken =
    first.reportsTaken !== undefined && loaded.reportsTaken !== undefined
      ? loaded.reportsTaken - first.reportsTaken
      : undefined;
  const profile =
    extra.profile && options.cpuProfDir
      ? await writeProfile(relay.process, options.cpuProfDir, `relay-flows${extra.phase ?? ''}`)
      : undefined;
  const after = await relay.process.sample({ gc: true });
  return {
    clients: poses.length,
    seconds,
    flows: tally.flows,
    flowsPerSecond: tally.flows / seconds,
    requests: tally.requests,
    requestsPerSecond: tally.requests / seconds,
    latency: {
      purchase: tally.latency.purchase.summary(),
      get: tally.latency.get.summary(),
      confirm: tally.latency.confirm.summary(),
      flow: tally.latency.flow.summary(),
    },
    errors: tally.errors.total,
    errorKinds: tally.errors.describe(),
    idleRss: idle.rss,
    peakRss: loaded.peakRss,
    idleHeap: idle.heapUsed,
    heapAfter: after.heapUsed,
    cpu,
    ...(reportsTaken !== undefined && tally.flows
      ? { reportsPerFlow: reportsTaken / tally.flows }
      : {}),
    ...(profile ? { profile } : {}),
  };
}

/** Stops the relay's CPU profile, writes it to `dir` and summarises it. */
export async function writeProfile(relay: RelayChild['process'], dir: string, label: string) {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.resolve(
    dir,
    `${label}-${new Date().toISOString().replace(/[:.]/g, '-')}.cpuprofile`,
  );
  await relay.profileStop(file);
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  return { file, summary: summarizeProfile(profile, 20) };
}
