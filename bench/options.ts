/**
 * The bench's knobs: flags (`npm run bench -- --seconds 5`) override BENCH_* variables,
 * which override the defaults. Defaults keep one full run under about five minutes (the
 * packaged agent's idle minute included), and as long again for each fleet phase (10,000
 * agents and a reconnect storm: on one relay, then on Mosquitto and two relays).
 */
import { parseArgs } from 'node:util';

export const PHASES = [
  'bare',
  'flows',
  'agentpath',
  'simulators',
  'wakeup',
  'events',
  'parked',
  'agents1000',
  'cluster',
  'agentfootprint',
  'fleet',
  'fleetcluster',
  'localmode',
] as const;
export type Phase = (typeof PHASES)[number];

export interface BenchOptions {
  /** Measured seconds of the bare ceiling and of the purchase flows (in process and agent path). */
  seconds: number;
  /** Unmeasured seconds before each of them (JIT, credential cache, connections). */
  warmupSeconds: number;
  /** autocannon connections against the bare server. */
  bareConnections: number;
  /** Concurrent POS clients, one simulated terminal and one keep-alive socket each. */
  clients: number;
  /** Wake-up samples to collect, and the POS clients (terminals) collecting them. */
  wakeSamples: number;
  wakeClients: number;
  /** Simulator delay of the wake-up relay: how long a transaction stays PROCESSING. */
  wakeDelayMs: number;
  /** How often each wake-up terminal starts a payment (longer than the delay). */
  wakePeriodMs: number;
  /** Long polls to park at once, and the PROCESSING transactions they spread over. */
  parked: number;
  parkedTerminals: number;
  /** Agents of the agents1000 phase, and agents started a second (both agent phases). */
  agents: number;
  agentsRate: number;
  /** POS clients of the events phase, the measured seconds of each of its two windows, and the flows a second of its paced window. */
  eventsClients: number;
  eventsSeconds: number;
  eventsPacedFlows: number;
  /** The idle window of the packaged agent's CPU figure (agentfootprint). */
  footprintIdleSeconds: number;
  /** POS clients of the simulators phase, one simulated terminal each. */
  simClients: number;
  /** The fleet phase: agents, their swarm processes, connects a second, heartbeat periods (s). */
  fleetAgents: number;
  fleetProcesses: number;
  fleetRate: number;
  fleetHeartbeatS: number;
  fleetShortHeartbeatS: number;
  /** Measured seconds of heartbeats alone, then of POS flows among them, at each period. */
  fleetSeconds: number;
  fleetFlowSeconds: number;
  /** POS clients (terminals of the fleet) and the flows a second they make together. */
  fleetPos: number;
  fleetFlowsPerSecond: number;
  /** The localmode phase: measured payments of each path, and the backlog made with the link cut. */
  localPayments: number;
  localBacklog: number;
  /** Directory for a V8 CPU profile of the flows relay, or undefined for none. */
  cpuProfDir: string | undefined;
  phases: Phase[];
}

const SPEC = {
  seconds: { env: 'BENCH_SECONDS', fallback: 15 },
  'warmup-seconds': { env: 'BENCH_WARMUP_SECONDS', fallback: 3 },
  'bare-connections': { env: 'BENCH_BARE_CONNECTIONS', fallback: 50 },
  clients: { env: 'BENCH_CLIENTS', fallback: 200 },
  'wake-samples': { env: 'BENCH_WAKE_SAMPLES', fallback: 1000 },
  'wake-clients': { env: 'BENCH_WAKE_CLIENTS', fallback: 60 },
  'wake-delay-ms': { env: 'BENCH_WAKE_DELAY_MS', fallback: 200 },
  'wake-period-ms': { env: 'BENCH_WAKE_PERIOD_MS', fallback: 250 },
  parked: { env: 'BENCH_PARKED', fallback: 10_000 },
  'parked-terminals': { env: 'BENCH_PARKED_TERMINALS', fallback: 100 },
  agents: { env: 'BENCH_AGENTS', fallback: 1000 },
  'agents-rate': { env: 'BENCH_AGENTS_RATE', fallback: 100 },
  'events-clients': { env: 'BENCH_EVENTS_CLIENTS', fallback: 50 },
  'events-seconds': { env: 'BENCH_EVENTS_SECONDS', fallback: 10 },
  'events-paced-flows': { env: 'BENCH_EVENTS_PACED_FLOWS', fallback: 50 },
  'footprint-idle-seconds': { env: 'BENCH_FOOTPRINT_IDLE_SECONDS', fallback: 60 },
  'sim-clients': { env: 'BENCH_SIM_CLIENTS', fallback: 64 },
  'fleet-agents': { env: 'BENCH_FLEET_AGENTS', fallback: 10_000 },
  'fleet-processes': { env: 'BENCH_FLEET_PROCESSES', fallback: 4 },
  'fleet-rate': { env: 'BENCH_FLEET_RATE', fallback: 150 },
  'fleet-heartbeat-s': { env: 'BENCH_FLEET_HEARTBEAT_S', fallback: 30 },
  'fleet-short-heartbeat-s': { env: 'BENCH_FLEET_SHORT_HEARTBEAT_S', fallback: 5 },
  'fleet-seconds': { env: 'BENCH_FLEET_SECONDS', fallback: 30 },
  'fleet-flow-seconds': { env: 'BENCH_FLEET_FLOW_SECONDS', fallback: 15 },
  'fleet-pos': { env: 'BENCH_FLEET_POS', fallback: 20 },
  'fleet-flows-per-second': { env: 'BENCH_FLEET_FLOWS_PER_SECOND', fallback: 10 },
  'local-payments': { env: 'BENCH_LOCAL_PAYMENTS', fallback: 500 },
  'local-backlog': { env: 'BENCH_LOCAL_BACKLOG', fallback: 10_000 },
} as const;

export const USAGE = `Usage: npm run bench -- [options]

${Object.entries(SPEC)
  .map(([flag, s]) => `  --${flag.padEnd(24)} ${s.env.padEnd(30)} default ${s.fallback}`)
  .join('\n')}
  --${'only'.padEnd(24)} ${'BENCH_ONLY'.padEnd(30)} comma list of ${PHASES.join(',')}
  --${'cpu-prof'.padEnd(24)} ${'BENCH_CPU_PROF'.padEnd(30)} directory: write CPU profiles of the flows, agentpath, simulators, wakeup and fleet relays there
`;

export function parseOptions(argv: string[], env: NodeJS.ProcessEnv): BenchOptions | 'help' {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      ...Object.fromEntries(Object.keys(SPEC).map((flag) => [flag, { type: 'string' as const }])),
      only: { type: 'string' },
      'cpu-prof': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return 'help';
  const number = (flag: keyof typeof SPEC): number => {
    const raw =
      ((values as Record<string, unknown>)[flag] as string | undefined) ?? env[SPEC[flag].env];
    if (raw === undefined || raw === '') return SPEC[flag].fallback;
    const value = Number(raw);
    if (!Number.isFinite(value) || value < 0) {
      throw new Error(`--${flag} / ${SPEC[flag].env}: not a number ≥ 0: ${raw}`);
    }
    return value;
  };
  const only = (values.only as string | undefined) ?? env.BENCH_ONLY;
  const phases = only ? only.split(',').map((p) => p.trim()) : [...PHASES];
  const unknown = phases.filter((p) => !(PHASES as readonly string[]).includes(p));
  if (unknown.length > 0)
    throw new Error(`unknown phase ${unknown.join(', ')}; pick from ${PHASES.join(', ')}`);
  return {
    seconds: number('seconds'),
    warmupSeconds: number('warmup-seconds'),
    bareConnections: number('bare-connections'),
    clients: number('clients'),
    wakeSamples: number('wake-samples'),
    wakeClients: number('wake-clients'),
    wakeDelayMs: number('wake-delay-ms'),
    wakePeriodMs: number('wake-period-ms'),
    parked: number('parked'),
    parkedTerminals: number('parked-terminals'),
    agents: number('agents'),
    agentsRate: number('agents-rate'),
    eventsClients: number('events-clients'),
    eventsSeconds: number('events-seconds'),
    eventsPacedFlows: number('events-paced-flows'),
    footprintIdleSeconds: Math.max(1, number('footprint-idle-seconds')),
    simClients: number('sim-clients'),
    fleetAgents: Math.max(1, number('fleet-agents')),
    fleetProcesses: Math.max(1, number('fleet-processes')),
    fleetRate: Math.max(1, number('fleet-rate')),
    fleetHeartbeatS: Math.max(1, number('fleet-heartbeat-s')),
    fleetShortHeartbeatS: Math.max(1, number('fleet-short-heartbeat-s')),
    fleetSeconds: number('fleet-seconds'),
    fleetFlowSeconds: number('fleet-flow-seconds'),
    fleetPos: Math.max(1, number('fleet-pos')),
    fleetFlowsPerSecond: Math.max(1, number('fleet-flows-per-second')),
    localPayments: Math.max(1, number('local-payments')),
    localBacklog: Math.max(1, number('local-backlog')),
    cpuProfDir: ((values['cpu-prof'] as string | undefined) ?? env.BENCH_CPU_PROF) || undefined,
    phases: phases as Phase[],
  };
}
