/**
 * Phase cluster: the agentpath load (POS clients → relay → MQTT → agents with instant
 * emulated readers in the fleet child) on three set-ups measured in one run: the embedded
 * default (SQLite, embedded broker), one relay on PostgreSQL with an external Mosquitto,
 * and two relays on the same PostgreSQL and Mosquitto with the POS clients split between
 * them (as a load balancer would). Needs DATABASE_URL (a database the bench may create
 * databases from) and a `mosquitto` binary, or MQTT_URL; skipped with the reason otherwise.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool } from 'undici';
import { freshDatabase, startMosquitto } from './external-backends.js';
import { startFleetChild, untilAgentsConnected, untilRelaySeesConnected } from './fleet-child.js';
import type { BenchOptions } from './options.js';
import { Pos, basicAuth, postJson } from './pos-api.js';
import { measureFlows, type FlowsResult } from './pos-clients.js';
import { startRelayChild, type RelayChild } from './relay-child.js';
import { LatencyRecorder, type LatencySummary } from './stats.js';

const TRANSACTION_EVENT = 'eu.vendor.api.pos.v0.Transaction';

export type ClusterSetup = 'embedded' | 'postgres-1' | 'postgres-2';
export type ClusterResult =
  | { skipped: string }
  | {
      setups: Partial<Record<ClusterSetup, FlowsResult>>;
      broker: string;
      /** An event-list wait on one relay, woken by a purchase committed through the other. */
      crossWake?: LatencySummary;
    };

export async function runCluster(options: BenchOptions): Promise<ClusterResult> {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) {
    return {
      skipped: 'DATABASE_URL is not set (e.g. postgres://postgres@127.0.0.1:5432/postgres)',
    };
  }
  const broker = process.env.MQTT_URL ? undefined : await startMosquitto();
  const mqttUrl = process.env.MQTT_URL ?? broker?.url;
  if (!mqttUrl) return { skipped: 'neither MQTT_URL nor a mosquitto binary' };
  try {
    const setups: Partial<Record<ClusterSetup, FlowsResult>> = {};
    let crossWake: LatencySummary | undefined;
    setups.embedded = await measure(options, []);
    for (const instances of [1, 2] as const) {
      const database = await freshDatabase(databaseUrl);
      try {
        const env = { TPS_DATABASE_URL: database.url, TPS_MQTT_URL: mqttUrl };
        const relays: RelayChild[] = [];
        try {
          // One after the other: the first applies the migrations alone.
          for (let i = 0; i < instances; i++) {
            relays.push(await startRelayChild({ simulatorDelayMs: 2000, env }));
          }
          setups[instances === 1 ? 'postgres-1' : 'postgres-2'] = await measure(
            options,
            relays,
            instances === 2
              ? async (terminals) => {
                  crossWake = await measureCrossWake(relays, terminals, options.wakeSamples);
                }
              : undefined,
          );
        } finally {
          for (const relay of relays) await relay.dispose();
        }
      } finally {
        await database.drop();
      }
    }
    return {
      setups,
      ...(crossWake ? { crossWake } : {}),
      broker: broker ? `a Mosquitto of the bench's own (${mqttUrl}, Nagle off)` : mqttUrl,
    };
  } finally {
    await broker?.stop();
  }
}

/** The agentpath measurement, against `relays` (none: a relay with its embedded defaults). */
async function measure(
  options: BenchOptions,
  given: RelayChild[],
  afterFlows?: (terminals: Array<{ terminal_id: string }>) => Promise<void>,
): Promise<FlowsResult> {
  const own = given.length === 0 ? await startRelayChild({ simulatorDelayMs: 2000 }) : undefined;
  const relays = own ? [own] : given;
  const pools = relays.map(
    (relay) =>
      new Pool(relay.origin, {
        connections: Math.ceil(options.clients / relays.length),
        pipelining: 1,
        keepAliveTimeout: 60_000,
      }),
  );
  const fleet = await startFleetChild(relays[0]!);
  try {
    const registered = await fleet.process.fleetRegister(options.clients, 4);
    const terminals = registered.terminals ?? [];
    await fleet.process.fleetConnect({
      ratePerSecond: options.agentsRate,
      delayMs: 0,
      heartbeatS: 3600,
    });
    const up = await untilAgentsConnected(fleet, terminals.length, 60_000);
    const missing = await untilRelaySeesConnected(pools[0]!, relays[0]!.account, terminals, 10_000);
    if (!up.connected || missing > 0) {
      throw new Error(
        `agents not connected: ${up.sample.agents?.connected ?? 0} of ${terminals.length}`,
      );
    }
    // Each POS talks to one relay, the clients spread evenly, as behind a load balancer.
    const poses = terminals.map((t, i) => new Pos(pools[i % pools.length]!, t.terminal_id, t));
    const flows = await measureFlows(relays[0]!, poses, options, {
      fleet: fleet.process,
      phase: `-cluster${relays.length}`,
    });
    await afterFlows?.(terminals);
    return flows;
  } finally {
    await Promise.all(pools.map((p) => p.close()));
    await fleet.dispose();
    await own?.dispose();
  }
}

/**
 * One sample at a time: an event-list wait parked on the second relay, then a purchase
 * through the first; the time from the purchase's answer (given after its commit) to the
 * wait's answer is the cross-relay wake-up (PostgreSQL NOTIFY, then the read).
 */
async function measureCrossWake(
  relays: RelayChild[],
  terminals: Array<{ terminal_id: string }>,
  samples: number,
): Promise<LatencySummary> {
  const [first, second] = relays as [RelayChild, RelayChild];
  const auth = basicAuth(first.account);
  const [toFirst, toSecond] = [new Pool(first.origin), new Pool(second.origin)];
  const latency = new LatencyRecorder();
  try {
    for (let i = 0; i < samples; i++) {
      const terminal = terminals[i % terminals.length]!;
      const start = await postJson<{ next_token: string }>(toSecond, '/pos/v1/event/list', auth, {
        filter: { subject: { eq: terminal.terminal_id }, type: { eq: TRANSACTION_EVENT } },
        limit: 1000,
        wait_seconds: 0,
      });
      const waiting = postJson<{ events: unknown[] }>(toSecond, '/pos/v1/event/list', auth, {
        next_token: start.body!.next_token,
        wait_seconds: 10,
      });
      await sleep(5);
      const bought = await postJson(toFirst, '/pos/v1/transaction/purchase', auth, {
        terminal_id: terminal.terminal_id,
        external_id: `wake-${Date.now().toString(36)}-${i}`,
        requested_amount: 100_002,
        currency: 'EUR',
        wait_seconds: 0,
      });
      const woken = await waiting;
      if (bought.status !== 200 || woken.status !== 200 || !woken.body?.events.length) continue;
      latency.record(Math.max(0, woken.receivedAt - bought.receivedAt));
    }
  } finally {
    await Promise.all([toFirst.close(), toSecond.close()]);
  }
  return latency.summary();
}
