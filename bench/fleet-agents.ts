/**
 * The fleet phases' agents from the bench's side (fleet on one relay, fleetcluster on
 * Mosquitto and two relays): terminals registered over the API, swarm children
 * (bench/fleet-swarm.ts) connected and counted, a window of heartbeats with POS flows
 * among them, and the payments that run across a storm.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import type { TerminalCreateResponse } from '../protocol/index.js';
import { BenchChild } from './child.js';
import type { SwarmStats, SwarmTerminal } from './ipc.js';
import type { BenchOptions } from './options.js';
import { basicAuth, postJson, type Credential, type Pos } from './pos-api.js';
import { Tally, drive } from './pos-clients.js';
import { LatencyRecorder, type LatencySummary } from './stats.js';

/** The agents' result comes this long after a start: the floor of a flow. */
export const RESULT_DELAY_MS = 200;

export async function startSwarms(count: number): Promise<BenchChild[]> {
  return Promise.all(
    Array.from({ length: count }, () =>
      BenchChild.start(new URL('./fleet-swarm.js', import.meta.url), {
        env: { BENCH_SWARM_RESULT_DELAY_MS: String(RESULT_DELAY_MS) },
      }),
    ),
  );
}

export async function swarmStats(swarms: BenchChild[]): Promise<SwarmStats> {
  const all = await Promise.all(swarms.map((s) => s.swarm({ kind: 'stats' })));
  const sum = (pick: (s: SwarmStats) => number) => all.reduce((n, s) => n + pick(s!), 0);
  return {
    agents: sum((s) => s.agents),
    connected: sum((s) => s.connected),
    reporting: sum((s) => s.reporting),
    reportsDue: sum((s) => s.reportsDue),
    ackedWithin1s: sum((s) => s.ackedWithin1s),
    ackMs: all.flatMap((s) => s!.ackMs),
    starts: sum((s) => s.starts),
    chargedTwice: sum((s) => s.chargedTwice),
    problems: all.map((s) => s!.problems).join('; '),
  };
}

export const eachSwarm = (swarms: BenchChild[], command: Parameters<BenchChild['swarm']>[0]) =>
  Promise.all(swarms.map((s) => s.swarm(command)));

/** Connects the terminals, split over the swarms, and waits until all of them report. */
export async function connectSwarms(
  swarms: BenchChild[],
  brokerUrl: string,
  terminals: SwarmTerminal[],
  options: BenchOptions,
  heartbeatS: number,
): Promise<number> {
  const started = performance.now();
  const per = Math.ceil(terminals.length / swarms.length);
  await Promise.all(
    swarms.map((swarm, i) =>
      swarm.swarm({
        kind: 'start',
        brokerUrl,
        terminals: terminals.slice(i * per, (i + 1) * per),
        ratePerSecond: options.fleetRate / swarms.length,
        heartbeatMs: heartbeatS * 1000,
      }),
    ),
  );
  const deadline =
    started + (terminals.length / options.fleetRate) * 1000 + heartbeatS * 1000 + 120_000;
  for (;;) {
    const stats = await swarmStats(swarms);
    if (stats.reporting >= terminals.length) break;
    if (performance.now() > deadline) {
      throw new Error(
        `only ${stats.reporting} of ${terminals.length} agents reporting: ${stats.problems}`,
      );
    }
    await sleep(250);
  }
  return (performance.now() - started) / 1000;
}

/** Registers `count` terminals through POST /pos/v1/terminal/create, 16 at a time. */
export async function registerTerminals(
  origin: string,
  account: Credential,
  count: number,
): Promise<TerminalCreateResponse[]> {
  const pool = new Pool(origin, { connections: 16, pipelining: 1 });
  const authorization = basicAuth(account);
  const created = new Array<TerminalCreateResponse>(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const slot = next++;
      const answer = await postJson<TerminalCreateResponse>(
        pool,
        '/pos/v1/terminal/create',
        authorization,
        {},
      );
      if (answer.status !== 200 || !answer.body)
        throw new Error(`terminal/create answered ${answer.status}`);
      created[slot] = answer.body;
    }
  };
  try {
    await Promise.all(Array.from({ length: 16 }, worker));
  } finally {
    await pool.close();
  }
  return created;
}

/** The agents' broker credentials of registered terminals. */
export const swarmTerminals = (created: TerminalCreateResponse[]): SwarmTerminal[] =>
  created.map((t) => ({ id: t.agent.username, password: t.agent.password }));

export interface HeartbeatWindow {
  heartbeatS: number;
  /** Reports acknowledged in the heartbeats-only window, and its length. */
  heartbeats: number;
  seconds: number;
  /** CPU time over that window of each process measured, in the order given, ms. */
  cpuMs: number[];
  /** Reports at least 1 s old over both parts, and the share acked within 1 s. */
  reportsDue: number;
  ackedWithin1s: number;
  ack: LatencySummary;
  /** POS flows on some terminals, paced, while the others beat: one entry per group of POS. */
  flows: PosFlows[];
}

export interface PosFlows {
  flows: number;
  flowErrors: string;
  flow: LatencySummary;
}

/**
 * One period at `heartbeatS`: after a whole period at it, `--fleet-seconds` of heartbeats
 * alone with the CPU of each of `cpuMsOf` (its CPU time so far, ms) read at both ends, then
 * `--fleet-flow-seconds` of POS flows among the heartbeats, paced to
 * `--fleet-flows-per-second` in all and counted by group (the POS of one relay, say).
 */
export async function measureHeartbeats(
  swarms: BenchChild[],
  posGroups: Pos[][],
  options: BenchOptions,
  heartbeatS: number,
  cpuMsOf: Array<() => Promise<number>>,
  flowLabel: string,
  /** A CPU profile of the heartbeats-only window (--cpu-prof). */
  profile?: { start(): Promise<void>; stop(): Promise<void> },
): Promise<HeartbeatWindow> {
  await eachSwarm(swarms, { kind: 'period', heartbeatMs: heartbeatS * 1000 });
  // One whole period first: every agent beats at the new period from then on.
  await sleep(heartbeatS * 1000);
  await eachSwarm(swarms, { kind: 'reset' });
  await profile?.start();
  const first = await Promise.all(cpuMsOf.map((cpu) => cpu()));
  const started = performance.now();
  await sleep(options.fleetSeconds * 1000);
  const last = await Promise.all(cpuMsOf.map((cpu) => cpu()));
  const seconds = (performance.now() - started) / 1000;
  await profile?.stop();
  const heartbeats = (await swarmStats(swarms)).ackMs.length;
  const allPos = posGroups.reduce((n, group) => n + group.length, 0);
  const tallies = posGroups.map(() => new Tally());
  await Promise.all(
    posGroups.map((group, i) =>
      drive(
        group,
        options.fleetFlowSeconds,
        tallies[i]!,
        posGroups.length === 1 ? flowLabel : `${flowLabel}-${i}`,
        (options.fleetFlowsPerSecond * group.length) / allPos,
      ),
    ),
  );
  await sleep(1500);
  const stats = await swarmStats(swarms);
  const ack = new LatencyRecorder();
  for (const v of stats.ackMs) ack.record(v);
  return {
    heartbeatS,
    heartbeats,
    seconds,
    cpuMs: last.map((v, i) => v - first[i]!),
    reportsDue: stats.reportsDue,
    ackedWithin1s: stats.ackedWithin1s,
    ack: ack.summary(),
    flows: tallies.map((tally) => ({
      flows: tally.flows,
      flowErrors: tally.errors.describe(),
      flow: tally.latency.flow.summary(),
    })),
  };
}

/** A payment per POS (`storm-<index>`), answered PROCESSING: how many were taken. */
export async function startStormPayments(poses: Pos[]): Promise<number> {
  const answers = await Promise.all(poses.map((pos, i) => pos.purchase(`storm-${i}`, 1000, 0)));
  return answers.filter((a) => a.status === 200).length;
}

/** Reads each storm payment (waiting while PROCESSING) and confirms it: how many ended CONFIRMED. */
export async function settleStormPayments(poses: Pos[]): Promise<number> {
  const confirmed = await Promise.all(
    poses.map(async (pos, i) => {
      let answer = await pos.get(`storm-${i}`, 25);
      for (let tries = 0; answer.body?.transaction?.state === 'PROCESSING' && tries < 4; tries++) {
        answer = await pos.get(`storm-${i}`, 25);
      }
      if (answer.body?.transaction?.state !== 'AWAITING_CONFIRM') return false;
      return (await pos.confirm(`storm-${i}`)).body?.transaction?.state === 'CONFIRMED';
    }),
  );
  return confirmed.filter(Boolean).length;
}
