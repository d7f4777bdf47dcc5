/**
 * The agent path's floor: what the broker alone costs for the MQTT round trips of a
 * flow. Bare aedes with an in-process subscriber that acks each report
 * (bench/fleet-floor-broker.ts) and lightweight agents (bench/fleet-swarm.ts) whose
 * reports arrive at the rate the agent path's round trips did. A report and its ack are
 * the four packets of every round trip a flow makes: report in, PUBACK out, ack out,
 * PUBACK in; a command and its cmd-ack are the same four the other way round. No relay
 * can carry a flow's round trips for less than this on the same machine.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { BenchChild } from './child.js';
import type { SwarmStats } from './ipc.js';

export interface MqttFloor {
  /** Round trips a second the swarm made in the window. */
  roundTripsPerSecond: number;
  /** The broker's CPU per round trip. */
  cpuPerRoundTripUs: number;
}

/** Agents of the swarm: each beats every AGENTS / rate seconds. */
const AGENTS = 200;
const CONNECT_TIMEOUT_MS = 30_000;

/** Bare aedes carrying `roundTripsPerSecond` report round trips for `seconds`. */
export async function measureMqttFloor(
  roundTripsPerSecond: number,
  seconds: number,
): Promise<MqttFloor> {
  const broker = await BenchChild.start(new URL('./fleet-floor-broker.js', import.meta.url));
  const swarm = await BenchChild.start(new URL('./fleet-swarm.js', import.meta.url));
  try {
    const terminals = Array.from({ length: AGENTS }, (_, i) => ({
      id: `floor-${i}`,
      password: 'unchecked',
    }));
    await swarm.swarm({
      kind: 'start',
      brokerUrl: broker.brokerUrl!,
      terminals,
      ratePerSecond: 1000,
      heartbeatMs: (AGENTS / Math.max(1, roundTripsPerSecond)) * 1000,
    });
    const deadline = performance.now() + CONNECT_TIMEOUT_MS;
    while ((await stats(swarm)).reporting < AGENTS) {
      if (performance.now() > deadline) throw new Error('floor agents not reporting');
      await sleep(100);
    }
    // A second to settle into the period, then the window.
    await sleep(1000);
    await swarm.swarm({ kind: 'reset' });
    const first = await broker.sample();
    const started = performance.now();
    await sleep(seconds * 1000);
    const last = await broker.sample();
    const elapsed = (performance.now() - started) / 1000;
    const roundTrips = (await stats(swarm)).ackMs.length;
    return {
      roundTripsPerSecond: roundTrips / elapsed,
      cpuPerRoundTripUs: ((last.cpuMs - first.cpuMs) * 1000) / Math.max(1, roundTrips),
    };
  } finally {
    await swarm.stop();
    await broker.stop();
  }
}

async function stats(swarm: BenchChild): Promise<SwarmStats> {
  const answer = await swarm.swarm({ kind: 'stats' });
  if (!answer) throw new Error('the swarm gave no stats');
  return answer;
}
