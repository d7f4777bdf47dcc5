/**
 * Starts bench/agent-fleet.ts as a child next to a relay child: the agents' own process,
 * with a fresh directory for their journals, removed after it. Helpers to wait until the
 * agents are connected, as the fleet sees it and as the relay answers it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Dispatcher } from 'undici';
import { BenchChild } from './child.js';
import type { FleetTerminal, ProcessSample } from './ipc.js';
import { basicAuth, postJson, type Credential } from './pos-api.js';
import type { RelayChild } from './relay-child.js';

export interface FleetChild {
  process: BenchChild;
  dataDir: string;
  /** Stops every agent (each says `connected: false` first) and removes their directory. */
  dispose(): Promise<void>;
}

/**
 * Where the agents keep their journals: BENCH_FLEET_TMPDIR, else /dev/shm (tmpfs) when
 * there is one, else the system's temp directory. In the field each agent has its own
 * disk and its own event loop; here hundreds share one process, where each agent's
 * synchronous journal commit (better-sqlite3, fsync) would stall all the others, and the
 * bench would measure the fleet's disk rather than the relay.
 */
export function fleetTmpDir(): string {
  const chosen = process.env.BENCH_FLEET_TMPDIR;
  if (chosen) return chosen;
  try {
    fs.accessSync('/dev/shm', fs.constants.W_OK);
    return '/dev/shm';
  } catch {
    return os.tmpdir();
  }
}

export async function startFleetChild(relay: RelayChild): Promise<FleetChild> {
  const dataDir = fs.mkdtempSync(path.join(fleetTmpDir(), 'tps-bench-fleet-'));
  try {
    const child = await BenchChild.start(new URL('./agent-fleet.js', import.meta.url), {
      env: {
        BENCH_FLEET_ORIGIN: relay.origin,
        BENCH_FLEET_BROKER_URL: relay.brokerUrl,
        BENCH_FLEET_USERNAME: relay.account.username,
        BENCH_FLEET_PASSWORD: relay.account.password,
        BENCH_FLEET_DIR: dataDir,
      },
    });
    return {
      process: child,
      dataDir,
      async dispose() {
        await child.stop();
        fs.rmSync(dataDir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    fs.rmSync(dataDir, { recursive: true, force: true });
    throw error;
  }
}

/** Samples the fleet every 100 ms until `count` agents have their link up, or the time runs out. */
export async function untilAgentsConnected(
  fleet: FleetChild,
  count: number,
  timeoutMs: number,
): Promise<{ sample: ProcessSample; connected: boolean }> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const sample = await fleet.process.sample();
    const connected = (sample.agents?.connected ?? 0) >= count;
    if (connected || performance.now() > deadline) return { sample, connected };
    await sleep(100);
  }
}

/**
 * Asks the relay (`POST /terminal/status`, account credential) until every terminal
 * answers `connected: true`, or the time runs out. Answers how many still did not.
 */
export async function untilRelaySeesConnected(
  dispatcher: Dispatcher,
  account: Credential,
  terminals: FleetTerminal[],
  timeoutMs: number,
  concurrency = 8,
): Promise<number> {
  const authorization = basicAuth(account);
  const deadline = performance.now() + timeoutMs;
  let waiting = terminals.map((t) => t.terminal_id);
  for (;;) {
    const still: string[] = [];
    let next = 0;
    const worker = async () => {
      while (next < waiting.length) {
        const id = waiting[next++]!;
        const answer = await postJson<{ status?: { connected?: boolean } }>(
          dispatcher,
          '/pos/v1/terminal/status',
          authorization,
          { terminal_id: id },
        );
        if (answer.status !== 200 || answer.body?.status?.connected !== true) still.push(id);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    waiting = still;
    if (waiting.length === 0 || performance.now() > deadline) return waiting.length;
    await sleep(100);
  }
}
