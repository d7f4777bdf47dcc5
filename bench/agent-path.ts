/**
 * Phase 3, agentpath: the flows phase's load (POS clients, purchase 100002 → get while
 * PROCESSING → confirm SUCCESS) with every terminal on the real path: a terminal agent
 * with emulated card-reader firmware (delay 0) on an in-memory serial line, connected to
 * the relay's embedded MQTT broker with its own credential. The agents run in their own
 * child process (bench/agent-fleet.ts), so the relay's CPU and memory stay its own; the
 * terminals are registered like real ones, with `POST /pos/v1/terminal/create`.
 */
import { performance } from 'node:perf_hooks';
import { Pool } from 'undici';
import {
  fleetTmpDir,
  startFleetChild,
  untilAgentsConnected,
  untilRelaySeesConnected,
} from './fleet-child.js';
import type { BenchOptions } from './options.js';
import { Pos } from './pos-api.js';
import { measureMqttFloor, type MqttFloor } from './mqtt-floor.js';
import { measureFlows, type FlowsResult } from './pos-clients.js';
import { startRelayChild } from './relay-child.js';

export interface AgentPathResult {
  flows: FlowsResult;
  /** Time to register the terminals, and from the first agent started to all connected. */
  registerSeconds: number;
  connectSeconds: number;
  /** Warnings and errors the agents logged over the whole phase. */
  agentWarnings: string;
  /** Where the agents' journals were (fleet-child.ts: tmpfs unless told otherwise). */
  journalDir: string;
  /** The broker alone carrying the flow's MQTT round trips at the rate they came. */
  mqttFloor?: MqttFloor & { roundTripsPerFlow: number };
}

/**
 * Commands a flow sends its terminal: the start. Confirming is the relay's own business,
 * and the instant-success amount never pauses for a continue.
 */
const COMMANDS_PER_FLOW = 1;

const CONNECT_TIMEOUT_MS = 60_000;

export async function runAgentPath(options: BenchOptions): Promise<AgentPathResult> {
  const measured = await measureAgentPath(options);
  const { reportsPerFlow, flowsPerSecond } = measured.flows;
  if (reportsPerFlow === undefined || !flowsPerSecond) return measured;
  // With the relay and its agents gone, so that the broker has the machine they had.
  const roundTripsPerFlow = reportsPerFlow + COMMANDS_PER_FLOW;
  const floor = await measureMqttFloor(
    options,
    flowsPerSecond * roundTripsPerFlow,
    Math.min(options.seconds, 10),
  );
  return { ...measured, mqttFloor: { ...floor, roundTripsPerFlow } };
}

async function measureAgentPath(options: BenchOptions): Promise<AgentPathResult> {
  // The same relay as the flows phase (in-process simulators, none created): terminals
  // registered with terminal/create are agent terminals, reached over MQTT.
  const relay = await startRelayChild({
    simulatorDelayMs: 2000,
    env: { BENCH_COUNT_REPORTS: '1' },
  });
  const pool = new Pool(relay.origin, {
    connections: options.clients,
    pipelining: 1,
    keepAliveTimeout: 60_000,
  });
  let fleet: Awaited<ReturnType<typeof startFleetChild>> | undefined;
  try {
    fleet = await startFleetChild(relay);
    const registered = await fleet.process.fleetRegister(options.clients, 4);
    const terminals = registered.terminals ?? [];
    const connectStarted = performance.now();
    await fleet.process.fleetConnect({
      ratePerSecond: options.agentsRate,
      delayMs: 0,
      heartbeatS: 3600,
    });
    const up = await untilAgentsConnected(fleet, terminals.length, CONNECT_TIMEOUT_MS);
    const missing = await untilRelaySeesConnected(pool, relay.account, terminals, 10_000);
    if (!up.connected || missing > 0) {
      throw new Error(
        `agents not connected: ${up.sample.agents?.connected ?? 0} of ${terminals.length} ` +
          `(fleet), ${missing} not connected for the relay; ${up.sample.agents?.warnings}`,
      );
    }
    const connectSeconds = (performance.now() - connectStarted) / 1000;

    const poses = terminals.map((t) => new Pos(pool, t.terminal_id, t));
    const flows = await measureFlows(relay, poses, options, {
      fleet: fleet.process,
      phase: '-agent',
      profile: options.cpuProfDir !== undefined,
    });
    const last = await fleet.process.sample();
    return {
      flows,
      registerSeconds: registered.ms / 1000,
      connectSeconds,
      agentWarnings: last.agents?.warnings ?? '0',
      journalDir: fleetTmpDir(),
    };
  } finally {
    await pool.close();
    // The agents go first: with the relay gone they would only try to reconnect.
    await fleet?.dispose();
    await relay.dispose();
  }
}
