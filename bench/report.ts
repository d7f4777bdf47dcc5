/** Renders the phases' results as plain-text tables, with the targets beside them. */
import type { AgentPathResult } from './agent-path.js';
import type { AgentsResult } from './agents1000.js';
import type { BareResult } from './bare-ceiling.js';
import type { ClusterResult, ClusterSetup } from './cluster.js';
import type { EventsResult, WindowResult } from './events.js';
import type { FlowsResult } from './pos-clients.js';
import type { ParkedResult } from './parked.js';
import type { WakeResult, WakeRun } from './wakeup.js';
import { pathTargetRows } from './report-paths.js';
import type { SimulatorsResult } from './simulators.js';
import {
  count,
  cpuLine,
  cpuPer,
  mb,
  ms,
  pct,
  perSecond,
  table,
  us,
  verdict,
  type LatencySummary,
} from './stats.js';

export interface Results {
  bare?: BareResult;
  flows?: FlowsResult;
  agentpath?: AgentPathResult;
  simulators?: SimulatorsResult;
  wakeup?: WakeResult;
  events?: EventsResult;
  parked?: ParkedResult;
  agents?: AgentsResult;
  cluster?: ClusterResult;
}

const TARGETS = {
  flowsPerSecond: 2_500,
  wakeP99Ms: 5,
  parked: 10_000,
  parkedRssBytes: 250 * 1024 * 1024,
  /** Issue 3: what 1,000 connected agents may cost the relay. */
  agents: 1000,
  agentsBytes: 200 * 1024 * 1024,
};

const latencyCells = (l: LatencySummary | undefined) =>
  l && l.count > 0 ? [ms(l.p50), ms(l.p99)] : ['-', '-'];

export function renderBareVsProduct({ bare, flows }: Results): string {
  const flowsOf = (v: (f: FlowsResult) => string) => (flows ? v(flows) : '-');
  const bareOf = (v: (b: BareResult) => string) => (bare ? v(bare) : '-');
  return table([
    ['', 'bare fastify + Basic check', 'relay: purchase flows'],
    [
      'load',
      bareOf((b) => `autocannon, ${b.connections} conns`),
      flowsOf((f) => `${f.clients} POS clients (undici)`),
    ],
    [
      'measured',
      bareOf((b) => `${b.seconds.toFixed(1)} s`),
      flowsOf((f) => `${f.seconds.toFixed(1)} s`),
    ],
    [
      'requests/s',
      bareOf((b) => perSecond(b.requestsPerSecond)),
      flowsOf((f) => perSecond(f.requestsPerSecond)),
    ],
    ['flows/s', '-', flowsOf((f) => perSecond(f.flowsPerSecond))],
    [
      'request p50',
      bareOf((b) => ms(b.latency.p50)),
      flowsOf((f) => ms(f.latency.purchase.p50) + ' (purchase)'),
    ],
    [
      'request p99',
      bareOf((b) => ms(b.latency.p99)),
      flowsOf((f) => ms(f.latency.purchase.p99) + ' (purchase)'),
    ],
    ['errors (non-200)', bareOf((b) => count(b.errors)), flowsOf((f) => count(f.errors))],
    [
      'server CPU (of one core)',
      bareOf((b) => pct(b.cpu.server)),
      flowsOf((f) => pct(f.cpu.server)),
    ],
    [
      'server CPU per request',
      bareOf((b) => us(cpuPer(b.cpu.server, b.seconds, b.requests))),
      flowsOf((f) => us(cpuPer(f.cpu.server, f.seconds, f.requests))),
    ],
    ['server CPU per flow', '-', flowsOf((f) => us(cpuPer(f.cpu.server, f.seconds, f.flows)))],
    [
      'of it main thread, per flow',
      '-',
      flowsOf((f) =>
        f.cpu.serverMain === undefined
          ? '-'
          : `${us(cpuPer(f.cpu.serverMain, f.seconds, f.flows))} (${pct(f.cpu.serverMain)} busy)`,
      ),
    ],
    [
      'client CPU (of one core)',
      bareOf((b) => pct(b.cpu.client)),
      flowsOf((f) => pct(f.cpu.client)),
    ],
    ['other processes CPU', bareOf((b) => pct(b.cpu.others)), flowsOf((f) => pct(f.cpu.others))],
    ['idle RSS', '-', flowsOf((f) => mb(f.idleRss))],
    ['peak RSS', bareOf((b) => mb(b.peakRss)), flowsOf((f) => mb(f.peakRss))],
    ['heap before → after (GC)', '-', flowsOf((f) => `${mb(f.idleHeap)} → ${mb(f.heapAfter)}`)],
  ]);
}

export function renderFlowLatencies(flows: FlowsResult): string {
  const rows = (['purchase', 'get', 'confirm', 'flow'] as const).map((type) => {
    const l = flows.latency[type];
    return [type, count(l.count), ...latencyCells(l), l.count ? ms(l.max) : '-'];
  });
  return table([['request', 'count', 'p50', 'p99', 'max'], ...rows]);
}

export function renderWakeup(w: WakeResult): string {
  const runs = [w.bare.spread, w.relay.spread, w.bare.burst, w.relay.burst];
  const row = (label: string, cell: (run: WakeRun) => string) => [label, ...runs.map(cell)];
  return (
    table([
      ['long-poll wake-up', 'bare, spread', 'relay, spread', 'bare, burst', 'relay, burst'],
      row('samples', (r) => count(r.latency.count)),
      row('p50', (r) => ms(r.latency.p50)),
      row('p90', (r) => ms(r.latency.p90)),
      row('p99', (r) => ms(r.latency.p99)),
      row('max', (r) => ms(r.latency.max)),
      row('p99 from updated_at (ms)', (r) => ms(r.fromUpdatedAt.p99)),
      row('gets not parked (skipped)', (r) => count(r.notParked)),
      row('report time missing or off', (r) => count(r.unmatched)),
      row('errors', (r) => count(r.errors)),
      row('measured', (r) => `${r.seconds.toFixed(1)} s`),
      row('server / client / others CPU', (r) =>
        [r.cpu.server, r.cpu.client, r.cpu.others].map(pct).join(' / '),
      ),
    ]) +
    `\n${w.clients} terminals, each starting a payment every ${w.periodMs} ms; ` +
    `the terminal (a simulator, or the bare server's timer) takes ${w.delayMs} ms. ` +
    'Spread: each terminal at its own phase; burst: all at the same moment.'
  );
}

export function renderParked(p: ParkedResult): string {
  const growth = p.during.rss - p.before.rss;
  const parked = p.during.parked ?? 0;
  return table([
    ['parked long polls', ''],
    [
      'requested / parked at once',
      `${count(p.requested)} / ${count(p.parked)}` +
        (p.cappedBy ? ` (capped by ulimit -n ${p.cappedBy})` : ''),
    ],
    ['time to park them all', `${p.parkSeconds.toFixed(1)} s`],
    ['relay sockets while parked', count(p.during.sockets)],
    ['relay RSS before', mb(p.before.rss)],
    ['relay RSS while parked', mb(p.during.rss)],
    [
      'relay RSS growth',
      `${mb(growth)} (${parked ? (growth / parked / 1024).toFixed(1) : '-'} KB each)`,
    ],
    ['relay heap while parked', mb(p.during.heapUsed)],
    ['answered early', count(p.answeredEarly)],
    [
      'waiters released after destroy',
      p.releaseMs === undefined ? 'NOT ALL' : `0 left after ${ms(p.releaseMs)}`,
    ],
    ['relay RSS after release (GC)', mb(p.after.rss)],
    ['relay sockets after release', count(p.after.sockets)],
    ['later get (wait 0)', String(p.laterStatus)],
    ['errors', p.errors ? p.errorKinds : '0'],
  ]);
}

export function renderAgents(a: AgentsResult): string {
  const growth = a.connected.rss - a.before.rss;
  return table([
    [`${count(a.agents)} connected agents`, ''],
    ['registered (terminal/create)', `${a.registerSeconds.toFixed(1)} s`],
    ['ramp', `${count(a.ratePerSecond)} agents started a second`],
    [
      'all connected after',
      `${a.fleetConnectedSeconds.toFixed(1)} s (CONNACK), ` +
        `${a.relayConnectedSeconds.toFixed(1)} s (relay status)`,
    ],
    [
      'connected in the end',
      `${count(a.agentsConnected)} agents; relay: ${count(a.agents - a.relayMissing)} connected`,
    ],
    ['relay RSS fresh (GC)', mb(a.before.rss)],
    ['relay RSS registered (GC)', mb(a.registered.rss)],
    ['relay RSS all connected (GC)', mb(a.connected.rss)],
    [
      'relay RSS growth',
      `${mb(growth)} (${a.agents ? (growth / a.agents / 1024).toFixed(1) : '-'} KB each)`,
    ],
    ['relay peak RSS (ramp)', mb(a.peakRss)],
    ['relay heap fresh → connected', `${mb(a.before.heapUsed)} → ${mb(a.connected.heapUsed)}`],
    ['relay sockets', count(a.connected.sockets)],
    ['CPU during the ramp', `${cpuLine(a.rampCpu)} over ${a.rampSeconds.toFixed(1)} s`],
    ['CPU all connected, idle', cpuLine(a.idleCpu)],
    ['agents process RSS', `${mb(a.fleetRss)} (journals in ${a.journalDir})`],
    ['agent warnings', a.agentWarnings],
  ]);
}

export function renderEvents(e: EventsResult): string {
  const both = (v: (w: WindowResult) => string) => [v(e.full), v(e.paced)];
  const lat = (l: LatencySummary) =>
    l.count ? `${ms(l.p50)} / ${ms(l.p99)} / ${ms(l.max)} (${count(l.count)})` : '-';
  return table([
    ['events alongside payment flows', 'back to back', 'paced'],
    [
      'flows',
      ...both(
        (w) =>
          `${perSecond(w.flowsPerSecond)}` +
          (w.pacedAt ? ` (asked ${perSecond(w.pacedAt)})` : '') +
          `, ${count(w.flowErrors)} errors`,
      ),
    ],
    ['measured', ...both((w) => `${w.seconds.toFixed(1)} s`)],
    ['events written', ...both((w) => perSecond(w.written.total / w.seconds))],
    [
      '  Transaction / TerminalStatus',
      ...both(
        (w) =>
          `${count(w.written.transaction)} / ${count(w.written.status)}` +
          (w.written.other ? ` (+${count(w.written.other)})` : ''),
      ),
    ],
    ['events per flow', ...both((w) => (w.flows ? (w.written.total / w.flows).toFixed(2) : '-'))],
    ['long poll p50 / p99 / max (n)', ...both((w) => lat(w.reader))],
    ['webhook p50 / p99 / max (n)', ...both((w) => lat(w.webhook))],
    ['webhook deliveries', ...both((w) => perSecond(w.deliveredPerSecond))],
    ['webhook backlog at the end', ...both((w) => count(w.backlogAtEnd))],
    ["window's events not delivered", ...both((w) => count(w.undelivered))],
    ['CPU', ...both((w) => cpuLine(w.cpu))],
    [
      'webhook deliveries, load off',
      `${perSecond(e.idleDeliveredPerSecond)} (the first webhook's backlog)`,
      '',
    ],
    [
      'paced webhook drained',
      '',
      e.drainMs === undefined ? 'NOT within 15 s' : `after ${ms(e.drainMs)}`,
    ],
    [
      'long-poll answers woken / catching up',
      '',
      `${count(e.wokenAnswers)} / ${count(e.catchUpAnswers)}, ${e.eventsPerAnswer.toFixed(1)} events each`,
    ],
    [
      'webhook duplicates / bad signatures',
      '',
      `${count(e.duplicates)} / ${count(e.badSignatures)}`,
    ],
    ['reader errors', '', e.errors ? e.errorKinds : '0'],
  ]);
}

export function renderTargets({
  bare,
  flows,
  agentpath,
  simulators,
  wakeup,
  events,
  parked,
  agents,
}: Results): string {
  const rows: string[][] = [['target', 'measured', '']];
  if (flows) {
    rows.push([
      `flows/s ≥ ${count(TARGETS.flowsPerSecond)}, 0 errors`,
      `${perSecond(flows.flowsPerSecond)}, ${count(flows.errors)} errors`,
      verdict(flows.flowsPerSecond >= TARGETS.flowsPerSecond && flows.errors === 0),
    ]);
    if (bare) {
      rows.push([
        'relay requests/s vs bare ceiling',
        `${((flows.requestsPerSecond / bare.requestsPerSecond) * 100).toFixed(1)} %`,
        '',
      ]);
    }
  }
  rows.push(...pathTargetRows(flows, agentpath, simulators));
  if (wakeup) {
    const { latency } = wakeup.relay.spread;
    rows.push([
      `wake-up p99 < ${TARGETS.wakeP99Ms} ms (≥ 500 samples)`,
      `${ms(latency.p99)} over ${count(latency.count)}`,
      verdict(latency.p99 < TARGETS.wakeP99Ms && latency.count >= 500),
    ]);
    const burst = wakeup.relay.burst.latency;
    rows.push([
      `  all ${wakeup.clients} terminals at once (no target)`,
      `p50 ${ms(burst.p50)}, p99 ${ms(burst.p99)}`,
      '',
    ]);
  }
  if (events) {
    for (const w of [events.full, events.paced]) {
      rows.push([
        `events written at ${perSecond(w.flowsPerSecond)} flows (no target)`,
        perSecond(w.written.total / w.seconds),
        '',
      ]);
      rows.push([
        '  delay p50 / p99: long poll; webhook',
        `${latencyCells(w.reader).join(' / ')}; ${latencyCells(w.webhook).join(' / ')}` +
          (w.undelivered ? ` (${count(w.undelivered)} not delivered: behind)` : ''),
        '',
      ]);
    }
  }
  if (parked) {
    rows.push([
      `RSS with ${count(TARGETS.parked)} parked < ${mb(TARGETS.parkedRssBytes)}`,
      `${mb(parked.during.rss)} with ${count(parked.during.parked ?? 0)} parked`,
      verdict(
        parked.during.rss < TARGETS.parkedRssBytes && (parked.during.parked ?? 0) >= TARGETS.parked,
      ),
    ]);
    rows.push([
      'parked waiters fall back to 0',
      parked.releaseMs === undefined ? 'no' : `yes, ${ms(parked.releaseMs)}`,
      verdict(parked.releaseMs !== undefined && parked.laterStatus === 200),
    ]);
  }
  if (agents) {
    const growth = agents.connected.rss - agents.before.rss;
    const all = agents.agents >= TARGETS.agents && agents.relayMissing === 0;
    rows.push([
      `${count(TARGETS.agents)} agents cost the relay < ${mb(TARGETS.agentsBytes)} (RSS growth)`,
      `+${mb(growth)} with ${count(agents.agents - agents.relayMissing)} connected`,
      verdict(all && growth < TARGETS.agentsBytes),
    ]);
    rows.push([
      `  absolute: relay RSS < ${mb(TARGETS.agentsBytes)}`,
      mb(agents.connected.rss),
      verdict(all && agents.connected.rss < TARGETS.agentsBytes),
    ]);
  }
  return table(rows);
}

/** Above this share of one core taken by other processes, a phase's figures are suspect. */
const BUSY_MACHINE_PERCENT = 20;

/** A warning naming the phases that shared the machine with other work, or ''. */
export function renderNoise({
  bare,
  flows,
  agentpath,
  simulators,
  wakeup,
  events,
}: Results): string {
  const shares: Array<[string, number | undefined]> = [
    ['bare', bare?.cpu.others],
    ['flows', flows?.cpu.others],
    ['agentpath', agentpath?.flows.cpu.others],
    ['simulators, in process', simulators?.inProcess.cpu.others],
    ['simulators, agents', simulators?.agents.cpu.others],
    ['wakeup', wakeup?.relay.spread.cpu.others],
    ['events', events?.full.cpu.others],
  ];
  const busy = shares.filter(
    (entry): entry is [string, number] => entry[1] !== undefined && entry[1] > BUSY_MACHINE_PERCENT,
  );
  if (busy.length === 0) return '';
  const list = busy.map(([phase, others]) => `${pct(others)} (${phase})`).join(', ');
  return (
    `WARNING: other processes took ${list} of one core while measuring: ` +
    'throughput and latency read low. Run again on a quiet machine.'
  );
}

const SETUP_NAMES: Record<ClusterSetup, string> = {
  embedded: 'embedded (SQLite, aedes)',
  'postgres-1': '1 relay, PostgreSQL',
  'postgres-2': '2 relays, PostgreSQL',
};

/** Flows through the agent path on the embedded default, one and two relays on PostgreSQL. */
export function renderCluster(cluster: ClusterResult): string {
  if ('skipped' in cluster) return `skipped: ${cluster.skipped}`;
  const setups = (Object.keys(SETUP_NAMES) as ClusterSetup[]).filter((k) => cluster.setups[k]);
  const cells = (v: (f: FlowsResult) => string) => setups.map((k) => v(cluster.setups[k]!));
  const rows = [
    ['', ...setups.map((k) => SETUP_NAMES[k])],
    ['POS clients / agents', ...cells((f) => count(f.clients))],
    ['flows/s', ...cells((f) => perSecond(f.flowsPerSecond))],
    [
      'purchase p50 / p99',
      ...cells((f) => `${ms(f.latency.purchase.p50)} / ${ms(f.latency.purchase.p99)}`),
    ],
    ['flow p50 / p99', ...cells((f) => `${ms(f.latency.flow.p50)} / ${ms(f.latency.flow.p99)}`)],
    ['errors', ...cells((f) => count(f.errors))],
    ['first relay CPU (of one core)', ...cells((f) => pct(f.cpu.server))],
    ['agents CPU (fleet)', ...cells((f) => (f.cpu.fleet !== undefined ? pct(f.cpu.fleet) : '-'))],
    ['POS clients CPU', ...cells((f) => pct(f.cpu.client))],
    ['everything else (PostgreSQL, broker, 2nd relay)', ...cells((f) => pct(f.cpu.others))],
  ];
  const wake = cluster.crossWake;
  const wakeLine = wake
    ? `\nevent wait on relay 2 woken by a purchase through relay 1 (${count(wake.count)} samples): ` +
      `p50 ${ms(wake.p50)}, p99 ${ms(wake.p99)}, max ${ms(wake.max)}`
    : '';
  return `${table(rows)}\nbroker of the PostgreSQL set-ups: ${cluster.broker}${wakeLine}`;
}
