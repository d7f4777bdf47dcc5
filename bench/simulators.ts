/**
 * Phase simulators: simulated terminals as users run them. The same POS clients (64 by
 * default, `--sim-clients`) loop the flows phase's purchase → get while PROCESSING →
 * confirm against two relays, one after the other in the same run, each with terminals
 * made by `POST /pos/v1/simulator/create`:
 *
 * - in process (`TPS_SIMULATOR_MODE=in-process`): the relay plays the terminals itself;
 * - agents (`TPS_SIMULATOR_MODE=agent`, what `npm start` runs): each terminal is an agent
 *   with its journal and the emulated reader firmware inside the relay's process, joined
 *   to its embedded broker.
 *
 * The relay's data, the simulators' journals with it, lives where `TMPDIR` says (the
 * disk, unless told otherwise), as under `npm start`. Its CPU covers the simulators too.
 */
import { Pool } from 'undici';
import type { BenchOptions } from './options.js';
import { Pos, createSimulators } from './pos-api.js';
import { measureFlows, type FlowsResult } from './pos-clients.js';
import { startRelayChild } from './relay-child.js';

export type SimulatorMode = 'in-process' | 'agent';

export interface SimulatorsResult {
  inProcess: FlowsResult;
  agents: FlowsResult;
}

async function runMode(options: BenchOptions, mode: SimulatorMode): Promise<FlowsResult> {
  const relay = await startRelayChild({
    simulatorDelayMs: 0,
    env: { TPS_SIMULATOR_MODE: mode },
  });
  const pool = new Pool(relay.origin, {
    connections: options.simClients,
    pipelining: 1,
    keepAliveTimeout: 60_000,
  });
  try {
    const simulators = await createSimulators(pool, relay.account, options.simClients);
    const poses = simulators.map((s) => new Pos(pool, s.terminal_id, s));
    return await measureFlows(relay, poses, options, {
      phase: `-sim-${mode}`,
      profile: options.cpuProfDir !== undefined,
    });
  } finally {
    await pool.close();
    await relay.dispose();
  }
}

export async function runSimulators(options: BenchOptions): Promise<SimulatorsResult> {
  const inProcess = await runMode(options, 'in-process');
  const agents = await runMode(options, 'agent');
  return { inProcess, agents };
}
