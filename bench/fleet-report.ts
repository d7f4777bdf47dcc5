/**
 * The fleet phases' tables: each figure of the fleet phase beside its floor from the same
 * run and its target; the fleetcluster phase's per relay and for Mosquitto.
 */
import {
  FLEET_CLUSTER_PROCESSES,
  type FleetClusterResult,
  type FleetClusterWindow,
} from './fleet-cluster.js';
import type { FleetResult } from './fleet-scale.js';
import { count, mb, ms, table } from './stats.js';

export const FLEET_TARGETS = {
  rssPerAgentKb: 30,
  cpuPerHeartbeatUs: 150,
  ackedWithin1s: 0.99,
  stormSeconds: 60,
  /** The targets hold at this many agents; a smaller run is read as a quick check. */
  agents: 10_000,
} as const;

const met = (ok: boolean) => (ok ? 'met' : 'NOT met');
const us = (v: number) => `${v.toFixed(0)} µs`;
const kb = (v: number) => `${v.toFixed(1)} KB`;
const share = (due: number, within: number) =>
  due ? `${((within / due) * 100).toFixed(2)} %` : '-';

/** The floor's CPU per heartbeat at the rate of the relay's window of `heartbeatS`. */
function floorOf(r: FleetResult, heartbeatS: number): string {
  const w = r.floor.windows.find((f) => f.heartbeatS === heartbeatS);
  return w ? `${us(w.cpuPerHeartbeatUs)} at ${count(w.beatsPerSecond)}/s` : '-';
}

export function renderFleet(r: FleetResult): string {
  const t = FLEET_TARGETS;
  const scale =
    r.agents >= t.agents
      ? ''
      : `\n(${count(r.agents)} agents: the targets are set at ${count(t.agents)}; read this as a quick check)`;
  const setup = [
    `${count(r.agents)} agents in ${r.processes} swarm processes; terminals registered over the API in ${r.registerSeconds.toFixed(1)} s;` +
      ` all connected and reporting after ${r.connectSeconds.toFixed(1)} s`,
    `relay RSS after a GC: ${mb(r.rssRegistered)} with the terminals registered, ${mb(r.rssConnected)} with every agent connected`,
  ].join('\n');
  const windows = table([
    [
      'heartbeat',
      'beats/s',
      'relay CPU',
      'CPU/beat',
      'floor',
      'acked ≤ 1 s',
      'ack p50',
      'ack p99',
      'flows',
      'flow p50',
      'flow p99',
      'flow errors',
    ],
    ...r.windows.map((w) => [
      `${w.heartbeatS} s`,
      count(w.heartbeats / w.seconds),
      `${w.relayCpu.toFixed(0)} %`,
      us(w.cpuPerHeartbeatUs),
      floorOf(r, w.heartbeatS),
      share(w.reportsDue, w.ackedWithin1s),
      ms(w.ack.p50),
      ms(w.ack.p99),
      count(w.flows),
      ms(w.flow.p50),
      ms(w.flow.p99),
      w.flowErrors,
    ]),
  ]);
  const s = r.storm;
  const worst = r.windows.reduce((a, b) => (b.cpuPerHeartbeatUs > a.cpuPerHeartbeatUs ? b : a));
  const worstCpu = worst.cpuPerHeartbeatUs;
  const worstDue = r.windows.reduce((n, w) => n + w.reportsDue, 0);
  const worstWithin = r.windows.reduce((n, w) => n + w.ackedWithin1s, 0);
  const targets = table([
    ['figure', 'measured', 'floor (same run)', 'target', ''],
    [
      'relay RSS per connected agent',
      kb(r.rssPerAgentKb),
      `${kb(r.floor.rssPerAgentKb)} (bare aedes, ${count(r.floor.agents)} agents)`,
      `≤ ${t.rssPerAgentKb} KB`,
      met(r.rssPerAgentKb <= t.rssPerAgentKb),
    ],
    [
      `relay CPU per heartbeat (worst period: ${worst.heartbeatS} s)`,
      us(worstCpu),
      `${floorOf(r, worst.heartbeatS)} (bare aedes + acking subscriber, same beats/s)`,
      `≤ ${t.cpuPerHeartbeatUs} µs`,
      met(worstCpu <= t.cpuPerHeartbeatUs),
    ],
    [
      'reports acked within 1 s',
      share(worstDue, worstWithin),
      '-',
      `≥ ${t.ackedWithin1s * 100} %`,
      met(worstDue > 0 && worstWithin / worstDue >= t.ackedWithin1s),
    ],
    [
      'storm: SIGTERM → 99 % reporting',
      `${s.seconds.toFixed(1)} s`,
      `${s.restartSeconds.toFixed(1)} s (relay restart alone)`,
      `≤ ${t.stormSeconds} s`,
      met(s.reporting >= r.agents * 0.99 && s.seconds <= t.stormSeconds),
    ],
    [
      'storm: payments lost or charged twice',
      `${s.lost} lost, ${s.chargedTwice} twice of ${s.payments}`,
      '-',
      '0',
      met(s.lost === 0 && s.chargedTwice === 0 && s.payments > 0),
    ],
  ]);
  return [
    setup,
    '',
    windows,
    `flows: the agents' result comes 200 ms after the start (the floor of a flow)`,
    '',
    `storm: relay CPU ${s.relayCpu.toFixed(0)} % of a core from its start to 99 %;` +
      ` ${count(s.reporting)} of ${count(r.agents)} reporting at the end`,
    s.problems ? `swarm connection problems: ${s.problems}` : '',
    '',
    targets + scale,
  ].join('\n');
}

/** The fleetcluster phase: each relay and Mosquitto, side by side; no targets yet. */
export function renderFleetCluster(r: FleetClusterResult): string {
  if ('skipped' in r) return `skipped: ${r.skipped}`;
  const setup = [
    `${count(r.agents)} agents in ${r.processes} swarm processes, each signed in to Mosquitto with its own credential`,
    `terminals registered over the API (relay 1) in ${r.registerSeconds.toFixed(1)} s; ` +
      `\`tps broker mosquitto\` and Mosquitto's reload ${r.brokerFilesSeconds.toFixed(1)} s; ` +
      `all connected and reporting after ${r.connectSeconds.toFixed(1)} s`,
    `broker: ${r.broker}`,
  ].join('\n');
  /** The two relays' figures added up (Mosquitto's is the third). */
  const bothRelays = (values: number[]) => values[0]! + values[1]!;
  const perProcess = (i: number, name: string) => [
    name,
    mb(r.memory[i]!.rssRegistered),
    mb(r.memory[i]!.rssConnected),
    kb(r.memory[i]!.rssPerAgentKb),
    ...r.windows.flatMap((w) => [us(w.cpuPerHeartbeatUs[i]!), `${w.cpuPercent[i]!.toFixed(0)} %`]),
    `${r.storm.cpuPercent[i]!.toFixed(0)} %`,
  ];
  const processes = table([
    [
      '',
      'RSS registered',
      'RSS connected',
      'RSS/agent',
      ...r.windows.flatMap((w) => [`CPU/beat ${w.heartbeatS} s`, `CPU ${w.heartbeatS} s`]),
      'CPU storm',
    ],
    ...FLEET_CLUSTER_PROCESSES.map((name, i) => perProcess(i, name)),
    [
      'both relays',
      mb(bothRelays(r.memory.map((m) => m.rssRegistered))),
      mb(bothRelays(r.memory.map((m) => m.rssConnected))),
      kb(bothRelays(r.memory.map((m) => m.rssPerAgentKb))),
      ...r.windows.flatMap((w) => [
        us(bothRelays(w.cpuPerHeartbeatUs)),
        `${bothRelays(w.cpuPercent).toFixed(0)} %`,
      ]),
      `${bothRelays(r.storm.cpuPercent).toFixed(0)} %`,
    ],
  ]);
  const flowCells = (w: FleetClusterWindow) =>
    w.flows.flatMap((f) => [count(f.flows), `${ms(f.flow.p50)} / ${ms(f.flow.p99)}`]);
  const windows = table([
    [
      'heartbeat',
      'beats/s',
      'acked ≤ 1 s',
      'ack p50',
      'ack p99',
      'flows relay 1',
      'flow p50 / p99',
      'flows relay 2',
      'flow p50 / p99',
      'flow errors',
    ],
    ...r.windows.map((w) => [
      `${w.heartbeatS} s`,
      count(w.heartbeats / w.seconds),
      share(w.reportsDue, w.ackedWithin1s),
      ms(w.ack.p50),
      ms(w.ack.p99),
      ...flowCells(w),
      w.flows
        .map((f) => f.flowErrors)
        .filter((errors) => errors !== '0')
        .join('; ') || '0',
    ]),
  ]);
  const s = r.storm;
  const back = s.reporting >= r.agents * 0.99;
  return [
    setup,
    '',
    processes,
    `CPU/beat: each process's CPU over the heartbeats-only window divided by every heartbeat acked in it;` +
      ` "both relays" is comparable to the fleet phase's one relay`,
    '',
    windows,
    `flows: the agents' result comes 200 ms after the start (the floor of a flow)`,
    '',
    `storm: Mosquitto restarted (SIGTERM, the same configuration on the same ports) under ${s.payments} payments in flight`,
    `  SIGTERM → 99 % of the agents reporting again: ${back ? `${s.seconds.toFixed(1)} s` : `not within ${s.seconds.toFixed(0)} s`}` +
      ` (Mosquitto's restart alone: ${s.restartSeconds.toFixed(2)} s); ${count(s.reporting)} of ${count(r.agents)} reporting at the end`,
    `  payments lost: ${s.lost}, charged twice: ${s.chargedTwice} (both must be 0: ${met(s.lost === 0 && s.chargedTwice === 0 && s.payments > 0)})`,
    `swarm, connection problems and re-sent outboxes over the phase: ${s.problems}`,
    `no targets yet: the figures say what one relay instance carries on this set-up`,
  ].join('\n');
}
