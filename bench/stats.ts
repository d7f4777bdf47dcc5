/** Latency samples and their percentiles, and the few number formats the tables use. */
import type { CpuShares } from './machine.js';

export interface LatencySummary {
  count: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** Keeps every sample (a few hundred thousand at most) and sorts once when asked. */
export class LatencyRecorder {
  private samples = new Float64Array(1024);
  private n = 0;

  record(ms: number): void {
    if (this.n === this.samples.length) {
      const grown = new Float64Array(this.samples.length * 2);
      grown.set(this.samples);
      this.samples = grown;
    }
    this.samples[this.n++] = ms;
  }

  get count(): number {
    return this.n;
  }

  summary(): LatencySummary {
    const sorted = this.samples.slice(0, this.n).sort();
    let sum = 0;
    for (const v of sorted) sum += v;
    return {
      count: this.n,
      mean: this.n ? sum / this.n : 0,
      p50: percentile(sorted, 50),
      p90: percentile(sorted, 90),
      p99: percentile(sorted, 99),
      max: this.n ? sorted[this.n - 1]! : 0,
    };
  }
}

/** Nearest-rank percentile of an ascending array; 0 when it is empty. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

/** Counts of distinct error kinds (status codes, error codes, exception names). */
export class ErrorTally {
  private readonly kinds = new Map<string, number>();

  add(kind: string): void {
    this.kinds.set(kind, (this.kinds.get(kind) ?? 0) + 1);
  }

  get total(): number {
    let n = 0;
    for (const count of this.kinds.values()) n += count;
    return n;
  }

  describe(): string {
    if (this.kinds.size === 0) return '0';
    return [...this.kinds].map(([kind, n]) => `${n}× ${kind}`).join(', ');
  }
}

export const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`;
export const ms = (v: number) => (v >= 100 ? `${v.toFixed(0)} ms` : `${v.toFixed(2)} ms`);
export const perSecond = (v: number) => `${Math.round(v).toLocaleString('en-US')}/s`;
export const count = (v: number) => Math.round(v).toLocaleString('en-US');
export const pct = (v: number) => `${v.toFixed(0)} %`;
export const us = (v: number) => `${Math.round(v).toLocaleString('en-US')} µs`;
export const verdict = (ok: boolean) => (ok ? 'met' : 'MISSED');
/** Who took the CPU during a window, in % of one core. */
export const cpuLine = (c: CpuShares) =>
  `relay ${pct(c.server)}, bench ${pct(c.client)}` +
  (c.fleet !== undefined ? `, agents ${pct(c.fleet)}` : '') +
  `, others ${pct(c.others)}`;
/** CPU time per item, µs, from a CPU share (% of one core) over a window. */
export const cpuPer = (percent: number, seconds: number, items: number) =>
  items ? ((percent / 100) * seconds * 1e6) / items : 0;

/** Prints rows as an aligned plain-text table (first row is the header). */
export function table(rows: string[][]): string {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  }
  const line = (row: string[]) =>
    row
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join('  ');
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  const [header, ...body] = rows;
  return [line(header ?? []), rule, ...body.map(line)].join('\n');
}
