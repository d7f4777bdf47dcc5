/** Renders the phases' results as plain-text tables, with the targets beside them. */
import type { BareResult } from './bare-ceiling.js';
import type { FlowsResult } from './pos-clients.js';
import type { ParkedResult } from './parked.js';
import type { WakeResult } from './wakeup.js';
import { count, mb, ms, perSecond, table, type LatencySummary } from './stats.js';

export interface Results {
  bare?: BareResult;
  flows?: FlowsResult;
  wakeup?: WakeResult;
  parked?: ParkedResult;
}

const TARGETS = {
  flowsPerSecond: 2_500,
  wakeP99Ms: 5,
  parked: 10_000,
  parkedRssBytes: 250 * 1024 * 1024,
};

/** CPU time per item, µs, from a CPU share (% of one core) over a window. */
const cpuPer = (percent: number, seconds: number, items: number) =>
  items ? ((percent / 100) * seconds * 1e6) / items : 0;
const pct = (v: number) => `${v.toFixed(0)} %`;
const us = (v: number) => `${Math.round(v).toLocaleString('en-US')} µs`;

const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');
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
  return table([
    ['long-poll wake-up', ''],
    ['samples', count(w.latency.count)],
    ['p50', ms(w.latency.p50)],
    ['p90', ms(w.latency.p90)],
    ['p99', ms(w.latency.p99)],
    ['max', ms(w.latency.max)],
    ['gets not parked (skipped)', count(w.notParked)],
    ['errors', count(w.errors)],
    ['terminals / simulator delay', `${w.clients} / ${w.delayMs} ms`],
    ['measured', `${w.seconds.toFixed(1)} s`],
    [
      'relay / client / others CPU',
      `${pct(w.cpu.server)} / ${pct(w.cpu.client)} / ${pct(w.cpu.others)}`,
    ],
  ]);
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

export function renderTargets({ bare, flows, wakeup, parked }: Results): string {
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
  if (wakeup) {
    rows.push([
      `wake-up p99 < ${TARGETS.wakeP99Ms} ms (≥ 500 samples)`,
      `${ms(wakeup.latency.p99)} over ${count(wakeup.latency.count)}`,
      verdict(wakeup.latency.p99 < TARGETS.wakeP99Ms && wakeup.latency.count >= 500),
    ]);
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
  return table(rows);
}

/** Above this share of one core taken by other processes, a phase's figures are suspect. */
const BUSY_MACHINE_PERCENT = 20;

/** A warning naming the phases that shared the machine with other work, or ''. */
export function renderNoise({ bare, flows, wakeup }: Results): string {
  const shares: Array<[string, number | undefined]> = [
    ['bare', bare?.cpu.others],
    ['flows', flows?.cpu.others],
    ['wakeup', wakeup?.cpu.others],
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
