/**
 * Phase `fleet`: one relay (embedded broker, SQLite) with N connected agents. The agents
 * are lightweight (bench/fleet-swarm.ts, a few child processes) and speak the agent
 * protocol: retained presence, status reports in the real envelope at a heartbeat period,
 * report-acks, commands. Terminals are registered through the API, as an operator does.
 *
 * Measured: the relay's RSS growth per connected agent; its CPU per heartbeat at the
 * agents' default period and at a short one (cpuUsage of the relay process, over IPC);
 * the share of reports acknowledged within 1 s; POS flow latency on some terminals while
 * the others beat; and a reconnect storm: the relay stopped with SIGTERM and started again
 * on the same store and port, until 99 % of the agents are connected and reporting, with
 * payments in flight across it (none may be lost or charged twice). The floor, from the
 * same run: bare aedes and an in-process subscriber that acks each report
 * (bench/fleet-floor-broker.ts), with the same swarm at min(N, 2,000) agents beating at
 * each window's rate.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import type { TerminalCreateResponse } from '../protocol/index.js';
import { BenchChild } from './child.js';
import {
  connectSwarms,
  measureHeartbeats,
  registerTerminals,
  settleStormPayments,
  startStormPayments,
  startSwarms,
  swarmStats,
  swarmTerminals,
} from './fleet-agents.js';
import { FleetRelays, type FleetRelay } from './fleet-relay.js';
import type { SwarmTerminal } from './ipc.js';
import type { BenchOptions } from './options.js';
import { Pos } from './pos-api.js';
import { writeProfile } from './pos-clients.js';
import type { LatencySummary } from './stats.js';

export interface FleetWindow {
  heartbeatS: number;
  /** Reports acknowledged in the heartbeats-only window, and the relay's CPU over it. */
  heartbeats: number;
  seconds: number;
  cpuPerHeartbeatUs: number;
  /** Relay CPU over the window, % of one core. */
  relayCpu: number;
  /** Reports at least 1 s old over both windows, and the share acked within 1 s. */
  reportsDue: number;
  ackedWithin1s: number;
  ack: LatencySummary;
  /** POS flows on some terminals, paced, while the others beat. */
  flows: number;
  flowErrors: string;
  flow: LatencySummary;
}

export interface FleetResult {
  agents: number;
  processes: number;
  registerSeconds: number;
  connectSeconds: number;
  /** The relay's RSS after a GC with the terminals registered, and with every agent connected. */
  rssRegistered: number;
  rssConnected: number;
  rssPerAgentKb: number;
  windows: FleetWindow[];
  storm: {
    /** SIGTERM until 99 % of the agents are connected and have a report acked again. */
    seconds: number;
    /** SIGTERM until the new relay was ready. */
    restartSeconds: number;
    /** The new relay's CPU from its start to 99 %, % of one core. */
    relayCpu: number;
    reporting: number;
    payments: number;
    lost: number;
    chargedTwice: number;
    problems: string;
  };
  floor: { agents: number; rssPerAgentKb: number; windows: FleetFloorWindow[] };
}

/** The floor's CPU per heartbeat at the rate of the relay's window of the same period. */
export interface FleetFloorWindow {
  /** The relay's window this one matches. */
  heartbeatS: number;
  beatsPerSecond: number;
  cpuPerHeartbeatUs: number;
}

const STORM_TIMEOUT_MS = 240_000;

/**
 * Bare aedes with the same swarm, at most 2,000 agents: RSS per connection, and CPU per
 * heartbeat round trip at each window's rate of heartbeats a second (N ÷ period), the
 * rate at which a heartbeat's cost is read: the fewer arrive together, the more each costs.
 */
async function measureFloor(options: BenchOptions, terminals: SwarmTerminal[]) {
  const broker = await BenchChild.start(new URL('./fleet-floor-broker.js', import.meta.url), {
    execArgv: ['--expose-gc'],
  });
  const swarms = await startSwarms(options.fleetProcesses);
  try {
    const agents = terminals.slice(0, Math.min(terminals.length, 2000));
    const before = await broker.sample({ gc: true });
    await connectSwarms(swarms, broker.brokerUrl!, agents, options, options.fleetShortHeartbeatS);
    const after = await broker.sample({ gc: true });
    const windows: FleetFloorWindow[] = [];
    const cpuMs = async () => (await broker.sample()).cpuMs;
    for (const heartbeatS of fleetPeriods(options)) {
      const periodS = (heartbeatS * agents.length) / terminals.length;
      const measured = await measureHeartbeats(swarms, [], options, periodS, [cpuMs], 'floor');
      windows.push({
        heartbeatS,
        beatsPerSecond: measured.heartbeats / measured.seconds,
        cpuPerHeartbeatUs: usPerHeartbeat(measured.cpuMs[0]!, measured.heartbeats),
      });
    }
    return {
      agents: agents.length,
      rssPerAgentKb: (after.rss - before.rss) / 1024 / agents.length,
      windows,
    };
  } finally {
    await Promise.all(swarms.map((s) => s.stop()));
    await broker.stop();
  }
}

/** The heartbeat periods the phase measures: the agents' default, then the short one. */
const fleetPeriods = (options: BenchOptions) => [
  options.fleetHeartbeatS,
  options.fleetShortHeartbeatS,
];

async function measureWindow(
  relay: FleetRelay,
  swarms: BenchChild[],
  poses: Pos[],
  options: BenchOptions,
  heartbeatS: number,
): Promise<FleetWindow> {
  const { cpuMs, flows, ...window } = await measureHeartbeats(
    swarms,
    [poses],
    options,
    heartbeatS,
    [async () => (await relay.process.sample()).cpuMs],
    `fleet${heartbeatS}`,
    options.cpuProfDir
      ? {
          start: () => relay.process.profileStart(),
          stop: async () => {
            await writeProfile(relay.process, options.cpuProfDir!, `relay-fleet-${heartbeatS}s`);
          },
        }
      : undefined,
  );
  const relayCpuMs = cpuMs[0]!;
  return {
    ...window,
    ...flows[0]!,
    cpuPerHeartbeatUs: usPerHeartbeat(relayCpuMs, window.heartbeats),
    relayCpu: (relayCpuMs / (window.seconds * 1000)) * 100,
  };
}

/** CPU milliseconds over a window, per heartbeat acknowledged in it, in µs. */
const usPerHeartbeat = (cpuMs: number, heartbeats: number) =>
  (cpuMs * 1000) / Math.max(1, heartbeats);

/** Payments started, then the relay restarted under them: each must end confirmed, once. */
async function storm(
  relays: FleetRelays,
  relay: FleetRelay,
  swarms: BenchChild[],
  posTerminals: TerminalCreateResponse[],
  agents: number,
) {
  const payments = await relayPool(relay, (pool) =>
    startStormPayments(posTerminals.map((t) => new Pos(pool, t.terminal_id, t))),
  );
  const started = performance.now();
  await relay.process.signal('SIGTERM');
  const next = await relays.start();
  const restartSeconds = (performance.now() - started) / 1000;
  const cpuFirst = await next.process.sample();
  const cpuStarted = performance.now();
  let stats = await swarmStats(swarms);
  while (stats.reporting < agents * 0.99 && performance.now() - started < STORM_TIMEOUT_MS) {
    await sleep(250);
    stats = await swarmStats(swarms);
  }
  const seconds = (performance.now() - started) / 1000;
  const cpuLast = await next.process.sample();
  const relayCpu = ((cpuLast.cpuMs - cpuFirst.cpuMs) / (performance.now() - cpuStarted)) * 100;
  const confirmed = await relayPool(next, (pool) =>
    settleStormPayments(posTerminals.map((t) => new Pos(pool, t.terminal_id, t))),
  );
  const after = await swarmStats(swarms);
  return {
    relay: next,
    result: {
      seconds,
      restartSeconds,
      relayCpu,
      reporting: stats.reporting,
      payments,
      lost: payments - confirmed,
      chargedTwice: after.chargedTwice,
      problems: after.problems,
    },
  };
}

async function relayPool<T>(relay: FleetRelay, use: (pool: Pool) => Promise<T>): Promise<T> {
  const pool = new Pool(relay.origin, { connections: 32, pipelining: 1 });
  try {
    return await use(pool);
  } finally {
    await pool.close();
  }
}

export async function runFleet(options: BenchOptions): Promise<FleetResult> {
  const n = options.fleetAgents;
  const relays = new FleetRelays(n);
  let relay = await relays.start();
  let swarms: BenchChild[] = [];
  let pool: Pool | undefined;
  try {
    const registerStarted = performance.now();
    const created = await registerTerminals(relay.origin, relays.account, n);
    const registerSeconds = (performance.now() - registerStarted) / 1000;
    const terminals = swarmTerminals(created);
    const floor = await measureFloor(options, terminals);

    const registered = await relay.process.sample({ gc: true });
    swarms = await startSwarms(options.fleetProcesses);
    const connectSeconds = await connectSwarms(
      swarms,
      relay.brokerUrl,
      terminals,
      options,
      options.fleetHeartbeatS,
    );
    const connected = await relay.process.sample({ gc: true });

    pool = new Pool(relay.origin, { connections: options.fleetPos, pipelining: 1 });
    const posTerminals = created.slice(0, options.fleetPos);
    const poses = posTerminals.map((t) => new Pos(pool!, t.terminal_id, t));
    const windows: FleetWindow[] = [];
    for (const heartbeatS of fleetPeriods(options)) {
      windows.push(await measureWindow(relay, swarms, poses, options, heartbeatS));
    }
    await pool.close();
    pool = undefined;
    const restarted = await storm(relays, relay, swarms, posTerminals, n);
    relay = restarted.relay;
    return {
      agents: n,
      processes: options.fleetProcesses,
      registerSeconds,
      connectSeconds,
      rssRegistered: registered.rss,
      rssConnected: connected.rss,
      rssPerAgentKb: (connected.rss - registered.rss) / 1024 / n,
      windows,
      storm: restarted.result,
      floor,
    };
  } finally {
    await pool?.close();
    await Promise.all(swarms.map((s) => s.stop()));
    await relay.process.stop();
    relays.dispose();
  }
}
