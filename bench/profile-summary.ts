/** Self and total (inclusive) time per function in a V8 CPU profile (.cpuprofile JSON). */
import path from 'node:path';
import { table } from './stats.js';

export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}
interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

const where = (node: ProfileNode) => {
  const { functionName, url, lineNumber } = node.callFrame;
  // The last two segments tell cloud/store/sqlite.js from better-sqlite3/lib/….
  const file = url
    ? `${url
        .replace(/^file:\/\//, '')
        .split(path.sep)
        .slice(-2)
        .join('/')}:${lineNumber + 1}`
    : '';
  return `${functionName || '(anonymous)'} ${file}`.trim();
};

export function summarizeProfile(profile: CpuProfile, top: number): string {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes)
    for (const child of node.children ?? []) parent.set(child, node.id);
  const selfUs = new Map<string, number>();
  const totalUs = new Map<string, number>();
  let all = 0;
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i] ?? 0;
    all += us;
    const node = byId.get(id);
    if (!node) return;
    const self = where(node);
    selfUs.set(self, (selfUs.get(self) ?? 0) + us);
    const seen = new Set<string>();
    for (let n: ProfileNode | undefined = node; n; n = byId.get(parent.get(n.id) ?? -1)) {
      const key = where(n);
      if (seen.has(key)) continue;
      seen.add(key);
      totalUs.set(key, (totalUs.get(key) ?? 0) + us);
    }
  });
  const rank = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([key, us]) => [
        key,
        `${(us / 1000).toFixed(0)} ms`,
        `${((us / all) * 100).toFixed(1)} %`,
      ]);
  return [
    `profile: ${(all / 1e6).toFixed(1)} s sampled`,
    '',
    table([['self time', 'ms', 'share'], ...rank(selfUs)]),
    '',
    table([['total time (function and its callees)', 'ms', 'share'], ...rank(totalUs)]),
  ].join('\n');
}
