/**
 * The agent path's floor: what the broker alone costs for the MQTT round trips of a
 * flow. Bare aedes with an in-process subscriber that acks each report
 * (bench/fleet-floor-broker.ts) and lightweight agents (bench/fleet-swarm.ts) whose
 * reports arrive at the rate the agent path's round trips did. A report and its ack are
 * the four packets of every round trip a flow makes: report in, PUBACK out, ack out,
 * PUBACK in; a command and its cmd-ack are the same four the other way round. No relay
 * can carry a flow's round trips for less than this on the same machine.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { BenchChild } from './child.js';
import { connectSwarms, eachSwarm, startSwarms, swarmStats } from './fleet-agents.js';
import type { BenchOptions } from './options.js';

export interface MqttFloor {
  /** Round trips a second the swarm made in the window. */
  roundTripsPerSecond: number;
  /** The broker's CPU per round trip. */
  cpuPerRoundTripUs: number;
}

/** Agents of the swarm: each beats every AGENTS / rate seconds. */
const AGENTS = 200;

/** Bare aedes carrying `roundTripsPerSecond` report round trips for `seconds`. */
export async function measureMqttFloor(
  options: BenchOptions,
  roundTripsPerSecond: number,
  seconds: number,
): Promise<MqttFloor> {
  const broker = await BenchChild.start(new URL('./fleet-floor-broker.js', import.meta.url));
  const swarms = await startSwarms(1);
  try {
    // The floor broker checks no credential; each agent still signs in with one of its own.
    const terminals = Array.from({ length: AGENTS }, (_, i) => ({
      id: `floor-${i}`,
      password: randomBytes(18).toString('base64url'),
    }));
    const periodS = AGENTS / Math.max(1, roundTripsPerSecond);
    await connectSwarms(swarms, broker.brokerUrl!, terminals, options, periodS);
    // A second to settle into the period, then the window.
    await sleep(1000);
    await eachSwarm(swarms, { kind: 'reset' });
    const first = await broker.sample();
    const started = performance.now();
    await sleep(seconds * 1000);
    const last = await broker.sample();
    const elapsed = (performance.now() - started) / 1000;
    const roundTrips = (await swarmStats(swarms)).ackMs.length;
    return {
      roundTripsPerSecond: roundTrips / elapsed,
      cpuPerRoundTripUs: ((last.cpuMs - first.cpuMs) * 1000) / Math.max(1, roundTrips),
    };
  } finally {
    await Promise.all(swarms.map((swarm) => swarm.stop()));
    await broker.stop();
  }
}
