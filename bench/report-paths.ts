/**
 * The tables of the phases that put the agent path beside the in-process one: agentpath
 * (the relay's CPU per flow with real agents in their own process, against the flows
 * phase) and simulators (flows/s of simulated terminals as agents inside the relay,
 * against simulated terminals in process, with the same POS clients).
 */
import os from 'node:os';
import type { AgentPathResult } from './agent-path.js';
import type { FlowsResult } from './pos-clients.js';
import type { SimulatorsResult } from './simulators.js';
import { count, cpuLine, cpuPer, mb, ms, pct, perSecond, table, us, verdict } from './stats.js';

const PATH_TARGETS = {
  /** The relay's CPU per flow on the agent path, at most this many times the in-process one's. */
  agentPathCpuRatio: 1.5,
  /** Simulators as agents keep at least this share of the in-process simulators' flows/s. */
  simulatorRatio: 0.5,
};

const cpuPerFlow = (f: FlowsResult) => cpuPer(f.cpu.server, f.seconds, f.flows);

/** The relay's CPU per flow on the agent path over the in-process path's, or undefined. */
function agentPathCpuRatio(flows?: FlowsResult, agentpath?: AgentPathResult) {
  const a = agentpath?.flows;
  if (!flows || !a || !a.flows || !flows.flows) return undefined;
  return cpuPerFlow(a) / cpuPerFlow(flows);
}

/**
 * The least the agent path can cost the relay: the in-process flow plus what bare aedes
 * takes for the flow's MQTT round trips, both measured in the same run.
 */
function agentPathFloor(flows?: FlowsResult, agentpath?: AgentPathResult) {
  const floor = agentpath?.mqttFloor;
  if (!flows || !flows.flows || !floor) return undefined;
  const mqtt = floor.roundTripsPerFlow * floor.cpuPerRoundTripUs;
  const perFlow = cpuPerFlow(flows) + mqtt;
  return { mqtt, perFlow, ratio: perFlow / cpuPerFlow(flows) };
}

/**
 * The most flows/s simulated terminals as agents could give on this machine: each flow
 * costs the relay's process what the agent path's flow costs the relay and its agent
 * together (same run), and it has the cores the POS clients leave.
 */
function simulatorCeiling(simulators: SimulatorsResult, agentpath?: AgentPathResult) {
  const a = agentpath?.flows;
  const { inProcess, agents } = simulators;
  if (!a?.flows || a.cpu.fleet === undefined || !inProcess.flowsPerSecond) return undefined;
  const perFlowUs = cpuPerFlow(a) + cpuPer(a.cpu.fleet, a.seconds, a.flows);
  const coresLeft = os.cpus().length * 100 - agents.cpu.client;
  const flowsPerSecond = ((coresLeft / 100) * 1e6) / perFlowUs;
  return { flowsPerSecond, ratio: flowsPerSecond / inProcess.flowsPerSecond };
}

function sideBySide(
  names: [string, string],
  left: FlowsResult | undefined,
  right: FlowsResult | undefined,
): string[][] {
  const both = (v: (f: FlowsResult) => string) => [left ? v(left) : '-', right ? v(right) : '-'];
  const latency = (type: 'purchase' | 'confirm' | 'flow') =>
    both((f) => `${ms(f.latency[type].p50)} / ${ms(f.latency[type].p99)}`);
  const ratio = (v: (f: FlowsResult) => number) =>
    left && right && v(left) ? (v(right) / v(left)).toFixed(2) : '-';
  return [
    ['', ...names],
    ['terminals', ...both((f) => `${f.clients} POS clients`)],
    ['measured', ...both((f) => `${f.seconds.toFixed(1)} s`)],
    ['flows/s', ...both((f) => perSecond(f.flowsPerSecond))],
    [`  ${names[1]} ÷ ${names[0]}`, '', ratio((f) => f.flowsPerSecond)],
    ['purchase p50 / p99', ...latency('purchase')],
    ['confirm p50 / p99', ...latency('confirm')],
    ['flow p50 / p99', ...latency('flow')],
    ['gets (still PROCESSING)', ...both((f) => count(f.latency.get.count))],
    ...(left?.reportsPerFlow !== undefined || right?.reportsPerFlow !== undefined
      ? [
          [
            'reports taken in per flow',
            ...both((f) => (f.reportsPerFlow === undefined ? '-' : f.reportsPerFlow.toFixed(2))),
          ],
        ]
      : []),
    ['errors', ...both((f) => count(f.errors))],
    ['relay CPU (of one core)', ...both((f) => pct(f.cpu.server))],
    ['relay CPU per flow', ...both((f) => us(cpuPerFlow(f)))],
    [`  ${names[1]} ÷ ${names[0]}`, '', ratio(cpuPerFlow)],
    ['one core ÷ relay CPU per flow', ...both((f) => perSecond(1e6 / (cpuPerFlow(f) || Infinity)))],
    ['CPU', ...both((f) => cpuLine(f.cpu))],
    ['relay idle → peak RSS', ...both((f) => `${mb(f.idleRss)} → ${mb(f.peakRss)}`)],
  ];
}

/** The flows phase beside the same load with every terminal an agent in the fleet process. */
export function renderAgentPath(flows?: FlowsResult, agentpath?: AgentPathResult): string {
  const a = agentpath?.flows;
  const rows = sideBySide(['in process (flows)', 'agent path (agentpath)'], flows, a);
  rows.push([
    'agents CPU per flow (fleet)',
    '-',
    a?.cpu.fleet !== undefined ? us(cpuPer(a.cpu.fleet, a.seconds, a.flows)) : '-',
  ]);
  if (agentpath) {
    rows.push([
      'agents registered / connected in',
      '',
      `${agentpath.registerSeconds.toFixed(1)} s / ${agentpath.connectSeconds.toFixed(1)} s`,
    ]);
    rows.push(["agents' journals in", '', agentpath.journalDir]);
    rows.push(['agent warnings', '', agentpath.agentWarnings]);
    const rt = agentpath.mqttFloor;
    if (rt) {
      rows.push([
        'MQTT round trips per flow',
        '',
        `${rt.roundTripsPerFlow.toFixed(2)} (reports ${(rt.roundTripsPerFlow - 1).toFixed(2)}, commands 1)`,
      ]);
      rows.push([
        'bare aedes CPU per round trip',
        '',
        `${us(rt.cpuPerRoundTripUs)} at ${perSecond(rt.roundTripsPerSecond)}`,
      ]);
    }
    const floor = agentPathFloor(flows, agentpath);
    if (floor) {
      rows.push([
        'floor: in process + bare aedes for the round trips',
        '',
        `${us(floor.perFlow)} (${floor.ratio.toFixed(2)} × in process; MQTT ${us(floor.mqtt)})`,
      ]);
    }
  }
  return table(rows);
}

/** Simulated terminals in process beside simulated terminals as agents, same clients. */
export function renderSimulators(s: SimulatorsResult): string {
  return table(
    sideBySide(['simulators in process', 'simulators as agents'], s.inProcess, s.agents),
  );
}

/** The target rows of both phases. */
export function pathTargetRows(
  flows: FlowsResult | undefined,
  agentpath: AgentPathResult | undefined,
  simulators: SimulatorsResult | undefined,
): string[][] {
  const rows: string[][] = [];
  if (agentpath) {
    const a = agentpath.flows;
    const ratio = agentPathCpuRatio(flows, agentpath);
    rows.push([
      `agent path: relay CPU per flow ≤ ${PATH_TARGETS.agentPathCpuRatio} × in process, 0 errors`,
      `${us(cpuPerFlow(a))} vs ${flows ? us(cpuPerFlow(flows)) : '(flows not run)'}` +
        `${ratio !== undefined ? ` = ${ratio.toFixed(2)} ×` : ''}, ${count(a.errors)} errors`,
      ratio === undefined ? '' : verdict(ratio <= PATH_TARGETS.agentPathCpuRatio && a.errors === 0),
    ]);
    const floor = agentPathFloor(flows, agentpath);
    if (floor) {
      rows.push([
        '  floor: in process + bare aedes for its round trips',
        `${us(floor.perFlow)} = ${floor.ratio.toFixed(2)} ×`,
        '',
      ]);
    }
    if (flows) {
      rows.push([
        '  flows/s, agent path ÷ in process (no target)',
        (a.flowsPerSecond / flows.flowsPerSecond).toFixed(2),
        '',
      ]);
    }
  }
  if (simulators) {
    const { inProcess, agents } = simulators;
    const ratio = inProcess.flowsPerSecond ? agents.flowsPerSecond / inProcess.flowsPerSecond : 0;
    rows.push([
      `simulators as agents ≥ ${PATH_TARGETS.simulatorRatio} × in process flows/s, 0 errors`,
      `${perSecond(agents.flowsPerSecond)} vs ${perSecond(inProcess.flowsPerSecond)} = ` +
        `${ratio.toFixed(2)}, ${count(agents.errors + inProcess.errors)} errors`,
      verdict(
        ratio >= PATH_TARGETS.simulatorRatio && agents.errors === 0 && inProcess.errors === 0,
      ),
    ]);
    const ceiling = simulatorCeiling(simulators, agentpath);
    if (ceiling) {
      rows.push([
        '  ceiling: cores left ÷ (relay + agent) CPU per flow of the agent path',
        `${perSecond(ceiling.flowsPerSecond)} = ${ceiling.ratio.toFixed(2)}`,
        '',
      ]);
    }
    // Simulated agents that cost nothing still cost the relay the agent path's flow: at
    // the CPU the in-process mode uses, that is the most their ratio can be.
    const a = agentpath?.flows;
    const pathRatio = agentPathCpuRatio(inProcess, agentpath);
    if (a && pathRatio !== undefined) {
      rows.push([
        '  with simulated agents that cost nothing: in process ÷ agent path, relay CPU per flow',
        `${us(cpuPerFlow(inProcess))} ÷ ${us(cpuPerFlow(a))} = ` + `${(1 / pathRatio).toFixed(2)}`,
        '',
      ]);
    }
  }
  return rows;
}
