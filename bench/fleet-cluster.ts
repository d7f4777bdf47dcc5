/**
 * Phase `fleetcluster`: the fleet phase (bench/fleet-scale.ts) on the set-up at scale, so
 * that operators know what one relay instance carries there. A Mosquitto of the bench's
 * own runs the configuration `tps broker mosquitto` prints (Nagle off, password file and
 * ACL, agents and relays on listeners of their own), a fresh PostgreSQL database, and two
 * relays on both. The terminals are registered over the API; the broker's files are then
 * written by `tps broker mosquitto` and Mosquitto reloaded, as an operator does after
 * registering terminals; each agent of the swarm signs in with its own credential.
 *
 * Measured, for each relay and for Mosquitto: RSS growth per connected agent, CPU per
 * heartbeat at two periods; for the whole: the share of reports acked within 1 s, the POS
 * flows of each relay's clients, and a storm: Mosquitto restarted (SIGTERM, then the same
 * configuration on the same ports), with payments in flight through both relays, until
 * 99 % of the agents report again; none may be lost or charged twice.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import type { BenchChild } from './child.js';
import {
  freshDatabase,
  hasMosquitto,
  startMosquitto,
  type BenchMosquitto,
} from './external-backends.js';
import {
  connectSwarms,
  measureHeartbeats,
  registerTerminals,
  settleStormPayments,
  startStormPayments,
  startSwarms,
  swarmStats,
  swarmTerminals,
  type HeartbeatWindow,
} from './fleet-agents.js';
import { FleetRelays, type FleetRelay } from './fleet-relay.js';
import type { BenchOptions } from './options.js';
import { Pos } from './pos-api.js';
import { cpuSecondsOf, rssOf } from './proc-usage.js';

/** The processes measured, in this order in every list of the result. */
export const FLEET_CLUSTER_PROCESSES = ['relay 1', 'relay 2', 'Mosquitto'] as const;

export interface ProcessMemory {
  /** RSS with the terminals registered (relays after a GC) and with every agent connected. */
  rssRegistered: number;
  rssConnected: number;
  rssPerAgentKb: number;
}

export interface FleetClusterWindow extends Omit<HeartbeatWindow, 'cpuMs'> {
  /** Per process: CPU over the heartbeats-only window divided by its heartbeats, and % of one core. */
  cpuPerHeartbeatUs: number[];
  cpuPercent: number[];
}

export type FleetClusterResult =
  | { skipped: string }
  | {
      agents: number;
      processes: number;
      broker: string;
      registerSeconds: number;
      /** `tps broker mosquitto` with every terminal registered, and Mosquitto's reload. */
      brokerFilesSeconds: number;
      connectSeconds: number;
      memory: ProcessMemory[];
      windows: FleetClusterWindow[];
      storm: {
        /** SIGTERM to Mosquitto until 99 % of the agents are connected and have a report acked again. */
        seconds: number;
        /** SIGTERM until the new Mosquitto accepted on both listeners. */
        restartSeconds: number;
        /** Per process, % of one core from SIGTERM (the new Mosquitto: from accepting) to 99 %. */
        cpuPercent: number[];
        reporting: number;
        payments: number;
        lost: number;
        chargedTwice: number;
        problems: string;
      };
    };

const STORM_TIMEOUT_MS = 240_000;
/** The relays' user at the broker, as `tps broker` defaults it. */
const RELAY_USERNAME = 'tps-relay';

/** What an operator runs after registering terminals: the files, then a reload (SIGHUP). */
async function writeBrokerFiles(brokerDir: string, env: Record<string, string>): Promise<void> {
  const tps = fileURLToPath(new URL('../bin/tps.js', import.meta.url));
  await promisify(execFile)(
    process.execPath,
    [tps, 'broker', 'mosquitto', '--out', brokerDir, '--json'],
    { env: { ...process.env, ...env } },
  );
}

export async function runFleetCluster(options: BenchOptions): Promise<FleetClusterResult> {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) {
    return {
      skipped: 'DATABASE_URL is not set (e.g. postgres://postgres@127.0.0.1:5432/postgres)',
    };
  }
  if (!hasMosquitto()) return { skipped: 'no mosquitto binary on PATH' };
  const n = options.fleetAgents;
  const database = await freshDatabase(databaseUrl);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-bench-fleetcluster-'));
  const brokerDir = path.join(work, 'broker');
  const relayPassword = randomBytes(18).toString('base64url');
  const tpsEnv = {
    TPS_DATABASE_URL: database.url,
    TPS_MQTT_USERNAME: RELAY_USERNAME,
    TPS_MQTT_PASSWORD: relayPassword,
    TPS_DATA_DIR: path.join(work, 'data'),
  };
  let broker: BenchMosquitto | undefined;
  const relays: FleetRelay[] = [];
  let relaySet: FleetRelays | undefined;
  let swarms: BenchChild[] = [];
  const pools: Pool[] = [];
  try {
    // The relay's own user must be in the password file before a relay connects.
    await writeBrokerFiles(brokerDir, tpsEnv);
    // Room for every agent and the sockets of a restart still closing, as the fleet phase
    // gives its relay: the printed configuration's 10,000 is one listener's default.
    const mosquitto = await startMosquitto({
      brokerDir,
      maxConnections: Math.ceil(n * 1.2) + 100,
    });
    if (!mosquitto) return { skipped: 'no mosquitto binary on PATH' };
    broker = mosquitto;
    relaySet = new FleetRelays(n, {
      ...tpsEnv,
      TPS_MQTT_URL: mosquitto.relayUrl,
      TPS_MQTT_PUBLIC_URL: mosquitto.url,
    });
    // One after the other: the first applies the migrations alone.
    for (let i = 0; i < 2; i++) relays.push(await relaySet.start());

    const registerStarted = performance.now();
    const created = await registerTerminals(relays[0]!.origin, relaySet.account, n);
    const registerSeconds = (performance.now() - registerStarted) / 1000;
    const filesStarted = performance.now();
    await writeBrokerFiles(brokerDir, tpsEnv);
    mosquitto.reload();
    const brokerFilesSeconds = (performance.now() - filesStarted) / 1000;

    // The relays' after a GC; Mosquitto's as it stands (C, no collector).
    const rss = async () => [
      ...(await Promise.all(relays.map(async (r) => (await r.process.sample({ gc: true })).rss))),
      rssOf(mosquitto.pid()),
    ];
    const cpuMsOf = [
      ...relays.map((r) => async () => (await r.process.sample()).cpuMs),
      async () => cpuSecondsOf(mosquitto.pid()) * 1000,
    ];
    const registered = await rss();
    swarms = await startSwarms(options.fleetProcesses);
    const terminals = swarmTerminals(created);
    const connectSeconds = await connectSwarms(
      swarms,
      mosquitto.url,
      terminals,
      options,
      options.fleetHeartbeatS,
    );
    const connected = await rss();

    // Each POS keeps to one relay, the clients split evenly, as behind a load balancer.
    for (const relay of relays) {
      pools.push(
        new Pool(relay.origin, {
          connections: Math.ceil(options.fleetPos / 2),
          pipelining: 1,
        }),
      );
    }
    const posTerminals = created.slice(0, options.fleetPos);
    const poses = posTerminals.map((t, i) => new Pos(pools[i % 2]!, t.terminal_id, t));
    const posGroups = pools.map((_, r) => poses.filter((_, i) => i % 2 === r));
    const windows: FleetClusterWindow[] = [];
    for (const heartbeatS of [options.fleetHeartbeatS, options.fleetShortHeartbeatS]) {
      const { cpuMs, ...window } = await measureHeartbeats(
        swarms,
        posGroups,
        options,
        heartbeatS,
        cpuMsOf,
        `fleetcluster${heartbeatS}`,
      );
      windows.push({
        ...window,
        cpuPerHeartbeatUs: cpuMs.map((v) => (v * 1000) / Math.max(1, window.heartbeats)),
        cpuPercent: cpuMs.map((v) => (v / (window.seconds * 1000)) * 100),
      });
    }
    const storm = await mosquittoStorm(mosquitto, relays, swarms, poses, n);
    return {
      agents: n,
      processes: options.fleetProcesses,
      broker:
        `a Mosquitto of the bench's own (${mosquitto.url} for agents, ${mosquitto.relayUrl} for relays),` +
        ' on the configuration and files of `tps broker mosquitto`',
      registerSeconds,
      brokerFilesSeconds,
      connectSeconds,
      memory: registered.map((before, i) => ({
        rssRegistered: before,
        rssConnected: connected[i]!,
        rssPerAgentKb: (connected[i]! - before) / 1024 / n,
      })),
      windows,
      storm,
    };
  } finally {
    await Promise.all(pools.map((p) => p.close()));
    await Promise.all(swarms.map((s) => s.stop()));
    await Promise.all(relays.map((r) => r.process.stop()));
    relaySet?.dispose();
    await broker?.stop();
    fs.rmSync(work, { recursive: true, force: true });
    await database.drop();
  }
}

/**
 * Payments started through both relays, then Mosquitto restarted under them: every agent
 * and both relays lose their connection and come back at once. Each payment must end
 * confirmed, once.
 */
async function mosquittoStorm(
  mosquitto: BenchMosquitto,
  relays: FleetRelay[],
  swarms: BenchChild[],
  poses: Pos[],
  agents: number,
) {
  const payments = await startStormPayments(poses);
  const relayCpuFirst = await Promise.all(
    relays.map(async (r) => (await r.process.sample()).cpuMs),
  );
  const started = performance.now();
  await mosquitto.restart();
  const restartSeconds = (performance.now() - started) / 1000;
  // Done once the agents have been seen down (a swarm may answer before it has read every
  // close) and 99 % of them report again.
  let seenDown = false;
  let stats = await swarmStats(swarms);
  for (;;) {
    if (stats.reporting < agents * 0.99) seenDown = true;
    else if (seenDown) break;
    if (performance.now() - started > STORM_TIMEOUT_MS) break;
    await sleep(250);
    stats = await swarmStats(swarms);
  }
  const elapsedMs = performance.now() - started;
  const relayCpuLast = await Promise.all(relays.map(async (r) => (await r.process.sample()).cpuMs));
  const mosquittoCpuMs = cpuSecondsOf(mosquitto.pid()) * 1000;
  const confirmed = await settleStormPayments(poses);
  const after = await swarmStats(swarms);
  return {
    seconds: elapsedMs / 1000,
    restartSeconds,
    cpuPercent: [
      ...relayCpuLast.map((last, i) => ((last - relayCpuFirst[i]!) / elapsedMs) * 100),
      (mosquittoCpuMs / (elapsedMs - restartSeconds * 1000)) * 100,
    ],
    reporting: stats.reporting,
    payments,
    lost: payments - confirmed,
    chargedTwice: after.chargedTwice,
    problems: after.problems,
  };
}
