/**
 * CPU accounting of a measured window: the server child, the bench process (the load
 * generator) and the whole machine, to tell a quiet run from one that shared the cores
 * with other work (tests, builds).
 */
import os from 'node:os';
import { performance } from 'node:perf_hooks';
import type { BenchChild } from './child.js';
import type { ProcessSample } from './ipc.js';

/** CPU use over a window, each in % of one core (a 2-core machine tops at 200 %). */
export interface CpuShares {
  server: number;
  /** The server's main thread alone (Linux): its event loop, the relay's usual limit. */
  serverMain?: number;
  client: number;
  /** The agent fleet's process, when a phase has one. */
  fleet?: number;
  /** Everything else on the machine: other processes, the kernel's share not charged to ours. */
  others: number;
}

function machineBusyMs(): number {
  let busy = 0;
  for (const { times } of os.cpus()) busy += times.user + times.nice + times.sys + times.irq;
  return busy;
}

/**
 * Starts a window; `end()` answers its length, the CPU shares and the child's last sample.
 * With a `fleet` child (the agents), its CPU is counted apart from the others'.
 */
export async function cpuWindow(child: BenchChild, fleet?: BenchChild) {
  const first = await child.sample();
  const fleetFirst = await fleet?.sample();
  const client = process.cpuUsage();
  const machine = machineBusyMs();
  const started = performance.now();
  return {
    async end(): Promise<{
      seconds: number;
      cpu: CpuShares;
      first: ProcessSample;
      sample: ProcessSample;
    }> {
      const wallMs = performance.now() - started;
      const used = process.cpuUsage(client);
      const machineMs = machineBusyMs() - machine;
      const sample = await child.sample();
      const fleetLast = await fleet?.sample();
      const server = ((sample.cpuMs - first.cpuMs) / wallMs) * 100;
      const serverMain =
        sample.mainThreadCpuMs !== undefined && first.mainThreadCpuMs !== undefined
          ? ((sample.mainThreadCpuMs - first.mainThreadCpuMs) / wallMs) * 100
          : undefined;
      const clientShare = ((used.user + used.system) / 1000 / wallMs) * 100;
      const fleetShare =
        fleetFirst && fleetLast ? ((fleetLast.cpuMs - fleetFirst.cpuMs) / wallMs) * 100 : undefined;
      const others = Math.max(
        0,
        (machineMs / wallMs) * 100 - server - clientShare - (fleetShare ?? 0),
      );
      return {
        seconds: wallMs / 1000,
        cpu: {
          server,
          ...(serverMain !== undefined ? { serverMain } : {}),
          client: clientShare,
          ...(fleetShare !== undefined ? { fleet: fleetShare } : {}),
          others,
        },
        first,
        sample,
      };
    },
  };
}

export function describeMachine(): string {
  const cpus = os.cpus();
  const [one, five] = os.loadavg();
  return (
    `node ${process.version}, ${cpus.length} × ${cpus[0]?.model ?? 'cpu'}, ` +
    `load average ${one?.toFixed(2)} (1 min) ${five?.toFixed(2)} (5 min)`
  );
}
