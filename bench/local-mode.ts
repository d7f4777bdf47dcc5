/**
 * Phase localmode (docs/local-mode.md): one terminal agent in local mode, in the bench's
 * process, with emulated reader firmware (delay 0); its MQTT link to the relay (a child
 * process of its own, so that its CPU is its own) runs through a TCP switch the phase cuts.
 *
 * 1. create → AWAITING_CONFIRM, sequential on the one terminal, through the relay (the
 *    cloud path) and then through the agent's local API over plain HTTP (the local path,
 *    link up: each payment is also forwarded at once); each payment confirmed after. The
 *    floor: the bare fastify server's round trip (bare-server.ts), sequential, same run.
 * 2. With the link cut, a backlog of local payments (made and confirmed); then the link
 *    restored and timed until the relay shows the last one CONFIRMED (the outbox is applied
 *    in seq order, so the last shown means all shown), with the relay's CPU time (/proc)
 *    over that window beside its CPU time per payment of each path in 1.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { Pool } from 'undici';
import { startAgent, type RunningAgent } from '../agent/agent.js';
import { AgentConfigSchema } from '../agent/config.js';
import { emulatedReader, type EmulatedReader } from '../agent/emulated-reader.js';
import type { LocalApiAuthenticator } from '../agent/local-api/authenticator.js';
import type { TerminalCreateResponse, Transaction } from '../protocol/index.js';
import { BenchChild } from './child.js';
import { fleetTmpDir, untilRelaySeesConnected } from './fleet-child.js';
import { LinkSwitch } from './link-switch.js';
import type { BenchOptions } from './options.js';
import { Pos, basicAuth, postJson, type Credential } from './pos-api.js';
import { cpuSecondsOf } from './proc-usage.js';
import { startRelayChild, type RelayChild } from './relay-child.js';
import {
  ErrorTally,
  LatencyRecorder,
  count,
  ms,
  perSecond,
  table,
  us,
  type LatencySummary,
} from './stats.js';

export interface PathResult {
  create: LatencySummary;
  confirm: LatencySummary;
  errors: string;
  /** The relay's CPU time (user + system, /proc) over the measured payments, per payment. */
  relayCpuUsPerPayment: number;
}

export interface BacklogResult {
  payments: number;
  /** Making and confirming them all locally with the link cut. */
  makeSeconds: number;
  /** Mean ms a payment over the first and the last tenth of them: does a backlog slow the next? */
  firstTenthMs: number;
  lastTenthMs: number;
  /** From restoring the link to the agent's link up again, and to the relay showing the last one. */
  reconnectSeconds: number;
  forwardSeconds: number;
  forwardedPerSecond: number;
  relayCpuUsPerPayment: number;
  /** Reports the relay took in over the window, per payment (status reports included). */
  reportsPerPayment: number;
  /** Backlog payments the relay lists afterwards, CONFIRMED and made locally. */
  shownOnRelay: number;
}

export interface LocalModeResult {
  payments: number;
  floor: LatencySummary;
  cloud: PathResult;
  local: PathResult;
  backlog: BacklogResult;
  agentWarnings: string;
  journalDir: string;
}

/** Payments of each path before the measured ones (JIT, connections, the relay's caches). */
const WARMUP_PAYMENTS = 50;
/** An amount with no trigger: the normal scenario, SUCCESS after the reader's delay (0). */
const AMOUNT = 1500;
const WAIT_SECONDS = 30;
const POLL_MS = 50;
const PAGE = 100;

const BARE_PATH = '/pos/v1/transaction/get';

export async function runLocalMode(options: BenchOptions): Promise<LocalModeResult> {
  const floor = await measureFloor(options.localPayments);
  const relay = await startRelayChild({
    simulatorDelayMs: 0,
    env: { BENCH_COUNT_REPORTS: '1' },
  });
  const pool = new Pool(relay.origin, { connections: 2, pipelining: 1, keepAliveTimeout: 60_000 });
  let bench: LocalBench | undefined;
  try {
    bench = await LocalBench.start(relay, pool);
    const cloud = await measurePath(relay, bench.cloudPos, 'cloud', options.localPayments);
    const local = await measurePath(relay, bench.localPos, 'local', options.localPayments);
    const backlog = await measureBacklog(relay, bench, options.localBacklog);
    return {
      payments: options.localPayments,
      floor,
      cloud,
      local,
      backlog,
      agentWarnings: bench.warnings.describe(),
      journalDir: fleetTmpDir(),
    };
  } finally {
    await bench?.dispose();
    await pool.close();
    await relay.dispose();
  }
}

/** The bare server's sequential round trip on one keep-alive connection. */
async function measureFloor(payments: number): Promise<LatencySummary> {
  const credential = { username: 'bench-bare', password: randomBytes(18).toString('base64url') };
  const authorization = basicAuth(credential);
  const server = await BenchChild.start(new URL('./bare-server.js', import.meta.url), {
    env: { BENCH_BARE_AUTHORIZATION: authorization, BENCH_BARE_PATH: BARE_PATH },
  });
  const pool = new Pool(server.origin, { connections: 1, pipelining: 1 });
  try {
    const latencies = new LatencyRecorder();
    const body = { terminal_id: 't-1', external_id: 'order-1' };
    for (let i = 0; i < WARMUP_PAYMENTS + payments; i++) {
      const answer = await postJson(pool, BARE_PATH, authorization, body);
      if (answer.status !== 200) throw new Error(`bare server answered ${answer.status}`);
      if (i >= WARMUP_PAYMENTS) latencies.record(answer.ms);
    }
    return latencies.summary();
  } finally {
    await pool.close();
    await server.stop();
  }
}

/** The relay, one registered terminal, its agent in local mode behind a link switch. */
class LocalBench {
  private constructor(
    readonly agent: RunningAgent,
    readonly link: LinkSwitch,
    readonly cloudPos: Pos,
    readonly localPos: Pos,
    readonly warnings: ErrorTally,
    private readonly reader: EmulatedReader,
    private readonly localPool: Pool,
    private readonly dataDir: string,
  ) {}

  static async start(relay: RelayChild, pool: Pool): Promise<LocalBench> {
    const created = await postJson<TerminalCreateResponse>(
      pool,
      '/pos/v1/terminal/create',
      basicAuth(relay.account),
      {},
    );
    if (created.status !== 200 || !created.body) {
      throw new Error(`terminal/create answered ${created.status}`);
    }
    const terminal = created.body;
    // The backlog is made with the link cut: the operator's bounds while the relay is out
    // of reach (docs/local-mode.md) must let it, as an operator who wants it would set them.
    const bounds = await postJson(pool, '/pos/v1/fleet/config/set', basicAuth(relay.account), {
      scope: { terminal_id: terminal.terminal_id },
      config: {
        local_api: {
          while_unreachable: {
            max_pending_count: 10_000,
            max_pending_total: 1_000_000_000,
            max_pending_age_seconds: 86_400,
          },
        },
      },
    });
    if (bounds.status !== 200) throw new Error(`fleet/config/set answered ${bounds.status}`);
    const broker = new URL(relay.brokerUrl);
    const link = new LinkSwitch({ host: broker.hostname, port: Number(broker.port) });
    const dataDir = fs.mkdtempSync(path.join(fleetTmpDir(), 'tps-bench-local-'));
    const reader = emulatedReader({ delayMs: 0, battery: false });
    const warnings = new ErrorTally();
    // Warnings and errors counted by message, as the agent fleet does: shown in the report.
    const logger = pino(
      { level: 'warn' },
      {
        write(line: string) {
          const { msg } = JSON.parse(line) as { msg?: string };
          warnings.add(msg ?? 'log line without msg');
        },
      },
    );
    const pos: Credential = {
      username: 'bench-local-pos',
      password: randomBytes(18).toString('base64url'),
    };
    const authenticator: LocalApiAuthenticator = {
      check: async (authorization) =>
        authorization === basicAuth(pos)
          ? { ok: true, username: pos.username }
          : { ok: false, status: 401 },
    };
    let agent: RunningAgent | undefined;
    try {
      const config = AgentConfigSchema.parse({
        terminal_id: terminal.terminal_id,
        broker: {
          url: await link.listen(),
          username: terminal.agent.username,
          password: terminal.agent.password,
        },
        reader: { emulated: { state_file: path.join(dataDir, 'reader.jsonl'), delay_ms: 0 } },
        printer: { type: 'none' },
        data_dir: dataDir,
        log_level: 'warn',
      });
      agent = await startAgent(config, {
        reader: reader.reader,
        logger,
        // The link comes back within 100 ms of being restored: the backlog's window is
        // forwarding, not the field's reconnect back-off.
        tuning: { reconnect: { initialMs: 20, maxMs: 100 } },
        localMode: { api: { host: '127.0.0.1', port: 0, tls: undefined, authenticator } },
      });
      const api = agent.local?.api;
      if (!api) throw new Error('the agent started no local API');
      const missing = await untilRelaySeesConnected(
        pool,
        relay.account,
        [{ terminal_id: terminal.terminal_id, username: '', password: '' }],
        30_000,
      );
      if (missing > 0) throw new Error('the relay never saw the agent connected');
      const localPool = new Pool(api.url, { connections: 1, pipelining: 1 });
      return new LocalBench(
        agent,
        link,
        new Pos(pool, terminal.terminal_id, terminal),
        new Pos(localPool, terminal.terminal_id, pos),
        warnings,
        reader,
        localPool,
        dataDir,
      );
    } catch (error) {
      await agent?.stop();
      await reader.close();
      await link.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
      throw error;
    }
  }

  async dispose(): Promise<void> {
    await this.localPool.close();
    await this.agent.stop();
    await this.reader.close();
    await this.link.close();
    fs.rmSync(this.dataDir, { recursive: true, force: true });
  }
}

/**
 * One payment: create, long-poll while PROCESSING, confirm SUCCESS. Answers the time to
 * AWAITING_CONFIRM and the confirm's, or the kind of what went wrong.
 */
async function pay(
  pos: Pos,
  externalId: string,
): Promise<{ createMs: number; confirmMs: number } | { error: string }> {
  const started = performance.now();
  let answer = await pos.purchase(externalId, AMOUNT, WAIT_SECONDS);
  while (answer.status === 200 && answer.body?.transaction?.state === 'PROCESSING') {
    answer = await pos.get(externalId, WAIT_SECONDS);
  }
  const createMs = performance.now() - started;
  const state = answer.body?.transaction?.state;
  if (answer.status !== 200 || state !== 'AWAITING_CONFIRM') {
    return { error: `create ${answer.status} ${answer.body?.error?.code ?? state}` };
  }
  const confirmed = await pos.confirm(externalId);
  if (confirmed.status !== 200 || confirmed.body?.transaction?.state !== 'CONFIRMED') {
    return {
      error: `confirm ${confirmed.status} ${confirmed.body?.error?.code ?? confirmed.body?.transaction?.state}`,
    };
  }
  return { createMs, confirmMs: confirmed.ms };
}

async function measurePath(
  relay: RelayChild,
  pos: Pos,
  name: string,
  payments: number,
): Promise<PathResult> {
  const errors = new ErrorTally();
  for (let i = 0; i < WARMUP_PAYMENTS; i++) {
    const paid = await pay(pos, `${name}-warm-${i}`);
    if ('error' in paid) errors.add(`warm-up ${paid.error}`);
  }
  const create = new LatencyRecorder();
  const confirm = new LatencyRecorder();
  const cpuBefore = cpuSecondsOf(relay.process.pid);
  for (let i = 0; i < payments; i++) {
    const paid = await pay(pos, `${name}-${i}`);
    if ('error' in paid) {
      errors.add(paid.error);
      continue;
    }
    create.record(paid.createMs);
    confirm.record(paid.confirmMs);
  }
  const cpuSeconds = cpuSecondsOf(relay.process.pid) - cpuBefore;
  return {
    create: create.summary(),
    confirm: confirm.summary(),
    errors: errors.describe(),
    relayCpuUsPerPayment: payments ? (cpuSeconds * 1e6) / payments : 0,
  };
}

async function until(what: string, done: () => boolean | Promise<boolean>, timeoutMs: number) {
  const deadline = performance.now() + timeoutMs;
  while (!(await done())) {
    if (performance.now() > deadline) throw new Error(`never happened: ${what}`);
    await sleep(POLL_MS);
  }
}

async function measureBacklog(
  relay: RelayChild,
  bench: LocalBench,
  payments: number,
): Promise<BacklogResult> {
  // What the local window forwarded is acknowledged first: the backlog is this window's
  // alone, up to the bound's ceiling (max_pending_count, 10,000).
  await until(
    'the local window forwarded',
    () => bench.agent.journal.localBacklog().count === 0,
    30_000,
  );
  bench.link.cut();
  await until('the link down', () => !bench.agent.link.connected, 30_000);
  const tenth = Math.max(1, Math.floor(payments / 10));
  const made = performance.now();
  let firstTenthEnd = made;
  let lastTenthStart = made;
  for (let i = 0; i < payments; i++) {
    if (i === payments - tenth) lastTenthStart = performance.now();
    const paid = await pay(bench.localPos, `backlog-${i}`);
    if ('error' in paid) throw new Error(`backlog payment ${i}: ${paid.error}`);
    if (i === tenth - 1) firstTenthEnd = performance.now();
  }
  const madeEnd = performance.now();
  const makeSeconds = (madeEnd - made) / 1000;

  const last = `backlog-${payments - 1}`;
  const reportsBefore = (await relay.process.sample()).reportsTaken ?? 0;
  const cpuBefore = cpuSecondsOf(relay.process.pid);
  const restored = performance.now();
  let reconnected: number | undefined;
  bench.link.restore();
  await until(
    'the backlog shown on the relay',
    async () => {
      if (reconnected === undefined && bench.agent.link.connected) reconnected = performance.now();
      const got = await bench.cloudPos.get(last, 0);
      return got.body?.transaction?.state === 'CONFIRMED';
    },
    600_000,
  );
  const forwardSeconds = (performance.now() - restored) / 1000;
  const cpuSeconds = cpuSecondsOf(relay.process.pid) - cpuBefore;
  const reportsTaken = ((await relay.process.sample()).reportsTaken ?? 0) - reportsBefore;
  return {
    payments,
    makeSeconds,
    firstTenthMs: (firstTenthEnd - made) / tenth,
    lastTenthMs: (madeEnd - lastTenthStart) / tenth,
    reconnectSeconds: ((reconnected ?? performance.now()) - restored) / 1000,
    forwardSeconds,
    forwardedPerSecond: payments / forwardSeconds,
    relayCpuUsPerPayment: (cpuSeconds * 1e6) / payments,
    reportsPerPayment: reportsTaken / payments,
    shownOnRelay: await countShown(relay, bench.cloudPos.terminalId),
  };
}

/** Backlog payments the relay lists CONFIRMED and made locally, page by page. */
async function countShown(relay: RelayChild, terminalId: string): Promise<number> {
  const pool = new Pool(relay.origin, { connections: 1 });
  try {
    let shown = 0;
    let cursor: string | undefined;
    do {
      const page = await postJson<{ transactions: Transaction[]; next_cursor?: string }>(
        pool,
        '/pos/v1/transaction/search',
        basicAuth(relay.account),
        {
          terminal_id: terminalId,
          state: 'CONFIRMED',
          limit: PAGE,
          ...(cursor ? { cursor } : {}),
        },
      );
      if (page.status !== 200 || !page.body) {
        throw new Error(`transaction/search answered ${page.status}`);
      }
      shown += page.body.transactions.filter(
        (t) => t.made_locally === true && t.external_id.startsWith('backlog-'),
      ).length;
      cursor = page.body.next_cursor;
    } while (cursor);
    return shown;
  } finally {
    await pool.close();
  }
}

export function renderLocalMode(r: LocalModeResult): string {
  const row = (name: string, l: LatencySummary, note: string) => [
    name,
    count(l.count),
    ms(l.p50),
    ms(l.p99),
    ms(l.max),
    note,
  ];
  const cpu = (p: PathResult) => `relay CPU ${us(p.relayCpuUsPerPayment)}/payment`;
  const b = r.backlog;
  return [
    table([
      ['create → AWAITING_CONFIRM, sequential', 'n', 'p50', 'p99', 'max', ''],
      row('floor: bare server round trip', r.floor, 'fastify + Basic check, one connection'),
      row('cloud path (relay → MQTT → agent)', r.cloud.create, cpu(r.cloud)),
      row('local path (agent local API)', r.local.create, `${cpu(r.local)} (forwarded at once)`),
      row('  confirm, cloud path', r.cloud.confirm, ''),
      row('  confirm, local path', r.local.confirm, ''),
    ]),
    `errors: cloud ${r.cloud.errors}; local ${r.local.errors}`,
    '',
    table([
      ['backlog forwarded when the link returns', 'value'],
      ['local payments made with the link cut', count(b.payments)],
      ['made and confirmed in', `${b.makeSeconds.toFixed(1)} s`],
      ['  a payment, first / last tenth', `${ms(b.firstTenthMs)} / ${ms(b.lastTenthMs)}`],
      ['link up again after', `${b.reconnectSeconds.toFixed(2)} s`],
      ['all shown on the relay after', `${b.forwardSeconds.toFixed(1)} s`],
      ['forwarded', perSecond(b.forwardedPerSecond)],
      ['relay CPU per forwarded payment', us(b.relayCpuUsPerPayment)],
      ['relay CPU per cloud-made payment (above)', us(r.cloud.relayCpuUsPerPayment)],
      ['reports taken in per payment', b.reportsPerPayment.toFixed(2)],
      ['shown on the relay, CONFIRMED, made locally', count(b.shownOnRelay)],
    ]),
    `agent warnings: ${r.agentWarnings}; agent journal in ${r.journalDir}`,
  ].join('\n');
}
