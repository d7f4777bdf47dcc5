/**
 * Phase 7, agents1000: the relay's memory with 1,000 connected terminal agents. The
 * relay child starts with no terminal; the fleet child (bench/agent-fleet.ts) registers
 * the terminals with `POST /pos/v1/terminal/create` and starts one idle agent each
 * (emulated firmware, heartbeat every hour), a few a second: a busy Node process accepts
 * only ≈ 100-150 new connections a second (docs/architecture.md, platform facts). The phase waits until every
 * agent has its CONNACK and the relay answers `connected: true` for every terminal, then
 * reads the relay's RSS after a GC, beside the reading before any terminal existed.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import {
  fleetTmpDir,
  startFleetChild,
  untilAgentsConnected,
  untilRelaySeesConnected,
} from './fleet-child.js';
import type { ProcessSample } from './ipc.js';
import { cpuWindow, type CpuShares } from './machine.js';
import type { BenchOptions } from './options.js';
import { startRelayChild } from './relay-child.js';

export interface AgentsResult {
  agents: number;
  ratePerSecond: number;
  /** The relay: fresh (no terminal), with the terminals registered, with every agent connected; each after a GC. */
  before: ProcessSample;
  registered: ProcessSample;
  connected: ProcessSample;
  /** The relay's largest RSS from the first agent started to the reading with all connected. */
  peakRss: number;
  registerSeconds: number;
  /** From the first agent started until all had their CONNACK (fleet) / the relay said connected. */
  fleetConnectedSeconds: number;
  relayConnectedSeconds: number;
  /** Agents connected in the end (fleet side), and terminals the relay did not see connected. */
  agentsConnected: number;
  relayMissing: number;
  /** CPU while the agents connected, and over a few idle seconds with all of them connected. */
  rampCpu: CpuShares;
  rampSeconds: number;
  idleCpu: CpuShares;
  /** The fleet process's RSS with every agent running (its own, not the relay's). */
  fleetRss: number;
  agentWarnings: string;
  /** Where the agents' journals were (fleet-child.ts). */
  journalDir: string;
}

const IDLE_SECONDS = 3;

export async function runAgents(options: BenchOptions): Promise<AgentsResult> {
  const relay = await startRelayChild({ simulatorDelayMs: 2000 });
  const pool = new Pool(relay.origin, { connections: 8, pipelining: 1 });
  let fleet: Awaited<ReturnType<typeof startFleetChild>> | undefined;
  try {
    fleet = await startFleetChild(relay);
    const before = await relay.process.sample({ gc: true });
    const reply = await fleet.process.fleetRegister(options.agents, 4);
    const terminals = reply.terminals ?? [];
    const registered = await relay.process.sample({ gc: true, resetPeak: true });

    const window = await cpuWindow(relay.process, fleet.process);
    const started = performance.now();
    await fleet.process.fleetConnect({
      ratePerSecond: options.agentsRate,
      delayMs: 0,
      heartbeatS: 3600,
    });
    // The ramp's own length, then a minute for stragglers (agents back off after a refusal).
    const up = await untilAgentsConnected(
      fleet,
      terminals.length,
      60_000 + (terminals.length / Math.max(1, options.agentsRate)) * 1000,
    );
    const fleetConnectedSeconds = (performance.now() - started) / 1000;
    const relayMissing = await untilRelaySeesConnected(pool, relay.account, terminals, 30_000);
    const relayConnectedSeconds = (performance.now() - started) / 1000;
    const ramp = await window.end();

    await sleep(1000);
    const connected = await relay.process.sample({ gc: true });
    const idle = await cpuWindow(relay.process, fleet.process);
    await sleep(IDLE_SECONDS * 1000);
    const idleEnd = await idle.end();
    const fleetSample = await fleet.process.sample();
    return {
      agents: terminals.length,
      ratePerSecond: options.agentsRate,
      before,
      registered,
      connected,
      peakRss: Math.max(connected.peakRss, ramp.sample.peakRss),
      registerSeconds: reply.ms / 1000,
      fleetConnectedSeconds,
      relayConnectedSeconds,
      agentsConnected: up.sample.agents?.connected ?? 0,
      relayMissing,
      rampCpu: ramp.cpu,
      rampSeconds: ramp.seconds,
      idleCpu: idleEnd.cpu,
      fleetRss: fleetSample.rss,
      agentWarnings: fleetSample.agents?.warnings ?? '0',
      journalDir: fleetTmpDir(),
    };
  } finally {
    await pool.close();
    await fleet?.dispose();
    await relay.dispose();
  }
}
