/**
 * Phase 6, parked long polls: many gets with wait_seconds 60 on PROCESSING transactions,
 * one socket each, then every client socket destroyed at once. The relay child counts its
 * parked waiters (the change feed's listeners) and its sockets over IPC.
 */
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import type { ProcessSample } from './ipc.js';
import type { BenchOptions } from './options.js';
import { Pos, createSimulators } from './pos-api.js';
import { startRelayChild, type RelayChild } from './relay-child.js';
import { ErrorTally } from './stats.js';

/** The simulator's longest delay: every ordinary purchase stays PROCESSING for 10 minutes. */
const LONG_DELAY_MS = 600_000;
const NORMAL_AMOUNT = 1_000;
const WAIT_SECONDS = 60;
/** Gets sent before waiting for the relay to have parked them (below the listen backlog, 511). */
const BATCH = 500;

export interface ParkedResult {
  requested: number;
  /** The open-file limit (ulimit -n), when it made the bench ask for fewer than asked. */
  cappedBy?: number;
  /** Most waiters the relay had parked at once. */
  parked: number;
  /** Time from the first get to the last one parked. */
  parkSeconds: number;
  before: ProcessSample;
  during: ProcessSample;
  /** Gets answered while they should have been parked (the relay let go of them early). */
  answeredEarly: number;
  /** Time from destroying the client sockets until the relay had no waiter left. */
  releaseMs: number | undefined;
  after: ProcessSample;
  /** A get (wait 0) after the release, on a fresh connection. */
  laterStatus: number;
  errors: number;
  errorKinds: string;
}

/** Sockets and files a process keeps besides the parked sockets (modules, SQLite, IPC…). */
const SPARE_FILES = 200;

/** The soft limit on open files of this process (the relay child inherits it), if known. */
function openFileLimit(): number | undefined {
  try {
    const limits = fs.readFileSync('/proc/self/limits', 'utf8');
    const soft = /^Max open files\s+(\d+)/m.exec(limits)?.[1];
    return soft ? Number(soft) : undefined;
  } catch {
    return undefined;
  }
}

async function until(
  relay: RelayChild,
  done: (sample: ProcessSample) => boolean,
  timeoutMs: number,
): Promise<ProcessSample> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const sample = await relay.process.sample();
    if (done(sample) || performance.now() > deadline) return sample;
    await sleep(20);
  }
}

export async function runParked(options: BenchOptions): Promise<ParkedResult> {
  // One socket per parked get on each side: the bench holds the client ends, the relay
  // the server ends, so each process needs that many file descriptors.
  const limit = openFileLimit();
  const requested =
    limit !== undefined ? Math.min(options.parked, limit - SPARE_FILES) : options.parked;
  const relay = await startRelayChild({ simulatorDelayMs: LONG_DELAY_MS });
  const setup = new Pool(relay.origin, { connections: 8, pipelining: 1 });
  const parkPool = new Pool(relay.origin, {
    connections: requested,
    pipelining: 1,
    connectTimeout: 30_000,
  });
  const afterwards = new Pool(relay.origin, { connections: 1, pipelining: 1 });
  const errors = new ErrorTally();
  try {
    const simulators = await createSimulators(setup, relay.account, options.parkedTerminals);
    const externalId = (i: number) => `parked-${i}`;
    const setupPoses = simulators.map((s) => new Pos(setup, s.terminal_id, relay.account));
    await Promise.all(
      setupPoses.map(async (pos, i) => {
        const created = await pos.purchase(externalId(i), NORMAL_AMOUNT, 0);
        if (created.body?.transaction?.state !== 'PROCESSING') {
          throw new Error(`purchase answered ${created.status}, not PROCESSING`);
        }
      }),
    );
    // The relay takes at most 10,000 connections by default (docs/security.md): the set-up
    // connections go before the 10,000 gets park, and a fresh one reads afterwards.
    await setup.close();
    await sleep(500);
    const before = await relay.process.sample({ gc: true, resetPeak: true });

    // Each terminal's POS parks with its own credential, as tills do: one credential may
    // park at most TPS_MAX_PARKED_PER_CREDENTIAL (docs/security.md).
    const poses = simulators.map((s) => new Pos(parkPool, s.terminal_id, s));
    let answeredEarly = 0;
    let aborted = false;
    const gets: Array<Promise<void>> = [];
    const started = performance.now();
    let parkedMost = 0;
    for (let sent = 0; sent < requested;) {
      const batch = Math.min(BATCH, requested - sent);
      for (let j = 0; j < batch; j++, sent++) {
        const t = sent % poses.length;
        gets.push(
          poses[t]!.get(externalId(t), WAIT_SECONDS).then(
            () => {
              answeredEarly += 1;
            },
            (error: unknown) => {
              if (!aborted) errors.add(`get ${(error as { code?: string }).code ?? String(error)}`);
            },
          ),
        );
      }
      const target = sent - answeredEarly - errors.total;
      const sample = await until(relay, (s) => (s.parked ?? 0) >= target, 15_000);
      parkedMost = Math.max(parkedMost, sample.parked ?? 0);
      if ((sample.parked ?? 0) < target) break;
    }
    const parkSeconds = (performance.now() - started) / 1000;
    await sleep(1000);
    const during = await relay.process.sample();
    parkedMost = Math.max(parkedMost, during.parked ?? 0);

    aborted = true;
    const destroyed = performance.now();
    await parkPool.destroy();
    const released = await until(relay, (s) => s.parked === 0, 15_000);
    const releaseMs = released.parked === 0 ? performance.now() - destroyed : undefined;
    await Promise.allSettled(gets);
    await sleep(500);
    const after = await relay.process.sample({ gc: true });
    const later = await new Pos(afterwards, setupPoses[0]!.terminalId, relay.account).get(
      externalId(0),
      0,
    );

    return {
      requested,
      ...(requested < options.parked ? { cappedBy: limit } : {}),
      parked: parkedMost,
      parkSeconds,
      before,
      during,
      answeredEarly,
      releaseMs,
      after,
      laterStatus: later.status,
      errors: errors.total,
      errorKinds: errors.describe(),
    };
  } finally {
    await parkPool.destroy().catch(() => undefined);
    await setup.close().catch(() => undefined);
    await afterwards.close();
    await relay.dispose();
  }
}
