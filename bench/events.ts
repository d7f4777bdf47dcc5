/**
 * Phase 5, events: the event log alongside payment flows. POS clients loop purchase
 * flows (as in the flows phase, fewer of them) on in-process simulated terminals while
 *
 * - a long-poll reader follows `POST /pos/v1/event/list` (filter type Transaction,
 *   `wait_seconds` 25, then each `next_token`), and
 * - a webhook receiver (node:http on 127.0.0.1, port 0, registered with
 *   `POST /pos/v1/webhook/create`, same filter; the relay runs with
 *   TPS_WEBHOOK_ALLOW_HTTP=true) takes the signed deliveries, answers 204, then checks
 *   each signature with client/webhook-signature.ts.
 *
 * Two windows: `full`, the clients looping flows back to back (the relay saturated: the
 * most events it writes alongside flows), then `paced`, the same clients paced to a fixed
 * total of flows a second, with a fresh webhook (a new one starts at the present), so
 * that the delays are not those of a backlog left by the first window.
 *
 * A delay sample is the time an event was fully read (reader) or received (webhook), minus
 * the event's `time`: the transaction's `updated_at`, set by the relay when it takes in the
 * change, just before the commit that writes the change and its event; ms precision,
 * truncated, so samples read 0-1 ms high. Both clocks are this machine's.
 *
 * Events written are counted from the log itself: after the load the bench reads the log
 * (account credential, every type) from a token taken just before the first window, and
 * counts the events whose `time` lies in each window, by type.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Pool, type Dispatcher } from 'undici';
import { WebhookVerifier } from '../client/webhook-signature.js';
import { eventType } from '../protocol/index.js';
import { cpuWindow, type CpuShares } from './machine.js';
import type { BenchOptions } from './options.js';
import { Pos, basicAuth, createSimulators, epochNow, postJson } from './pos-api.js';
import { Tally, drive } from './pos-clients.js';
import { startRelayChild, type RelayChild } from './relay-child.js';
import { ErrorTally, LatencyRecorder, type LatencySummary } from './stats.js';

const VENDOR = 'bench';
const TRANSACTION_TYPE = eventType(VENDOR, 'Transaction');
const STATUS_TYPE = eventType(VENDOR, 'TerminalStatus');
/** Most events an answer carries (the API's maximum). */
const PAGE = 1000;
/** How long the bench waits after the paced window for its webhook to deliver the rest. */
const DRAIN_TIMEOUT_MS = 15_000;
/** After the back-to-back window, how long the bench counts the first webhook's deliveries, load off. */
const IDLE_DELIVERY_MS = 3000;

interface WireEvent {
  id: string;
  type: string;
  time: string;
  subject: string;
}
interface EventPage {
  events?: WireEvent[];
  next_token?: string;
  error?: { code?: string };
}

export interface WindowResult {
  /** Flows a second asked for (paced), or undefined for back to back. */
  pacedAt: number | undefined;
  seconds: number;
  flows: number;
  flowsPerSecond: number;
  flowErrors: number;
  flowErrorKinds: string;
  /** Events whose `time` lies in the window, by type, read back from the log. */
  written: { total: number; transaction: number; status: number; other: number };
  /** Long-poll reader: delay of each Transaction event of the window. */
  reader: LatencySummary;
  /** Webhook receiver: delay of each Transaction event of the window it received. */
  webhook: LatencySummary;
  /** Deliveries received during the window, per second. */
  deliveredPerSecond: number;
  /** Matching events not yet delivered when the window ended (`backlog` of /webhook/list). */
  backlogAtEnd: number;
  /** Transaction events of the window not received when the bench stopped listening (the back-to-back window's webhook is removed 3 s after it). */
  undelivered: number;
  cpu: CpuShares;
}

export interface EventsResult {
  clients: number;
  full: WindowResult;
  paced: WindowResult;
  /** After the paced window: time until its webhook's backlog was 0, undefined if it never was. */
  drainMs: number | undefined;
  /** Deliveries a second of the first webhook, working off its backlog with the load off. */
  idleDeliveredPerSecond: number;
  /** Long-poll answers to a poll parked when its first event was written, and the others. */
  wokenAnswers: number;
  catchUpAnswers: number;
  eventsPerAnswer: number;
  duplicates: number;
  badSignatures: number;
  errors: number;
  errorKinds: string;
}

/** A measured window, in epoch ms, and what was recorded in it. */
class Window {
  start = Number.POSITIVE_INFINITY;
  end = Number.POSITIVE_INFINITY;
  readonly reader = new LatencyRecorder();
  readonly webhook = new LatencyRecorder();
  deliveries = 0;

  holds(time: number): boolean {
    return time >= Math.floor(this.start) && time <= this.end;
  }
}

/** Follows the log with one long poll at a time; records each event's delay in its window. */
class LongPollReader {
  wokenAnswers = 0;
  catchUpAnswers = 0;
  answers = 0;
  eventsRead = 0;
  private stopped = false;
  private done: Promise<void> = Promise.resolve();

  constructor(
    private readonly pool: Pool,
    private readonly authorization: string,
    private readonly windows: Window[],
    private readonly errors: ErrorTally,
  ) {}

  start(): void {
    this.done = this.loop();
  }

  private async loop(): Promise<void> {
    let token: string | undefined;
    while (!this.stopped) {
      const sentAt = epochNow();
      try {
        const answer = await postJson<EventPage>(
          this.pool,
          '/pos/v1/event/list',
          this.authorization,
          token
            ? { next_token: token, limit: PAGE, wait_seconds: 25 }
            : { filter: { type: { eq: TRANSACTION_TYPE } }, limit: PAGE, wait_seconds: 25 },
        );
        if (answer.status !== 200 || !answer.body?.next_token) {
          this.errors.add(`event/list ${answer.status} ${answer.body?.error?.code ?? ''}`.trim());
          await sleep(10);
          continue;
        }
        token = answer.body.next_token;
        const events = answer.body.events ?? [];
        if (events.length === 0) continue;
        this.answers += 1;
        this.eventsRead += events.length;
        if (sentAt <= Date.parse(events[0]!.time)) this.wokenAnswers += 1;
        else this.catchUpAnswers += 1;
        for (const event of events) {
          const time = Date.parse(event.time);
          this.windows.find((w) => w.holds(time))?.reader.record(answer.receivedAt - time);
        }
      } catch (error) {
        if (this.stopped) return;
        this.errors.add(`event/list ${(error as { code?: string }).code ?? String(error)}`);
        await sleep(10);
      }
    }
  }

  /** Ends the parked poll by destroying its connection. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.pool.destroy();
    await this.done;
  }
}

/** A webhook endpoint for one window: answers 204 at once, then checks and records. */
class WebhookReceiver {
  readonly seen = new Set<string>();
  duplicates = 0;
  badSignatures = 0;
  /** Transaction events of the window received. */
  received = 0;
  /** Every delivery, whatever its event. */
  total = 0;
  private verifier: WebhookVerifier | undefined;
  private readonly server: http.Server;

  constructor(private readonly window: Window) {
    this.server = http.createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const arrivedAt = epochNow();
        response.writeHead(204).end();
        this.take(Buffer.concat(chunks), request.headers['tps-signature'], arrivedAt);
      });
    });
  }

  /** Listens, registers itself with the relay, and answers the webhook's id. */
  async register(pool: Dispatcher, authorization: string): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    const { port } = this.server.address() as AddressInfo;
    const created = await postJson<{ webhook?: { id?: string; secret?: string } }>(
      pool,
      '/pos/v1/webhook/create',
      authorization,
      {
        url: `http://127.0.0.1:${port}/hooks/payments`,
        filter: { type: { eq: TRANSACTION_TYPE } },
        mode: 'structured',
      },
    );
    const { id, secret } = created.body?.webhook ?? {};
    if (created.status !== 200 || !id || !secret) {
      throw new Error(`webhook/create answered ${created.status}`);
    }
    this.verifier = new WebhookVerifier(secret);
    return id;
  }

  private take(body: Buffer, signature: string | string[] | undefined, arrivedAt: number): void {
    this.total += 1;
    if (arrivedAt >= this.window.start && arrivedAt <= this.window.end) this.window.deliveries += 1;
    try {
      this.verifier?.verify(body, signature);
    } catch {
      this.badSignatures += 1;
      return;
    }
    const event = JSON.parse(body.toString('utf8')) as WireEvent;
    if (this.seen.has(event.id)) {
      this.duplicates += 1;
      return;
    }
    this.seen.add(event.id);
    const time = Date.parse(event.time);
    if (this.window.holds(time)) {
      this.received += 1;
      this.window.webhook.record(arrivedAt - time);
    }
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** The `backlog` of one webhook, from /webhook/list. */
async function webhookBacklog(pool: Dispatcher, authorization: string, id: string) {
  const answer = await postJson<{ webhooks?: Array<{ id?: string; backlog?: number }> }>(
    pool,
    '/pos/v1/webhook/list',
    authorization,
    {},
  );
  const backlog = answer.body?.webhooks?.find((w) => w.id === id)?.backlog;
  if (answer.status !== 200 || backlog === undefined) {
    throw new Error(`webhook/list answered ${answer.status} without webhook ${id}`);
  }
  return backlog;
}

/** A token at the present for every event of the account (no filter, no token: now). */
async function tokenNow(pool: Dispatcher, authorization: string): Promise<string> {
  const answer = await postJson<EventPage>(pool, '/pos/v1/event/list', authorization, {
    limit: 1,
  });
  if (answer.status !== 200 || !answer.body?.next_token) {
    throw new Error(`event/list answered ${answer.status}`);
  }
  return answer.body.next_token;
}

type Written = WindowResult['written'];

/** Reads the log on from `token` to its end and counts each window's events by type. */
async function countWritten(
  pool: Dispatcher,
  authorization: string,
  token: string,
  windows: Window[],
): Promise<Written[]> {
  const written = windows.map(() => ({ total: 0, transaction: 0, status: 0, other: 0 }));
  for (;;) {
    const answer = await postJson<EventPage>(pool, '/pos/v1/event/list', authorization, {
      next_token: token,
      limit: PAGE,
    });
    if (answer.status !== 200 || !answer.body?.next_token) {
      throw new Error(`event/list answered ${answer.status} ${answer.body?.error?.code ?? ''}`);
    }
    const events = answer.body.events ?? [];
    for (const event of events) {
      const time = Date.parse(event.time);
      const counts = written[windows.findIndex((w) => w.holds(time))];
      if (!counts) continue;
      counts.total += 1;
      if (event.type === TRANSACTION_TYPE) counts.transaction += 1;
      else if (event.type === STATUS_TYPE) counts.status += 1;
      else counts.other += 1;
    }
    token = answer.body.next_token;
    if (events.length < PAGE) return written;
  }
}

async function measureWindow(
  relay: RelayChild,
  poses: Pos[],
  window: Window,
  seconds: number,
  label: string,
  flowsPerSecond?: number,
) {
  const tally = new Tally();
  const cpu = await cpuWindow(relay.process);
  window.start = epochNow();
  await drive(poses, seconds, tally, label, flowsPerSecond);
  window.end = epochNow();
  const { cpu: shares } = await cpu.end();
  return { tally, cpu: shares };
}

export async function runEvents(options: BenchOptions): Promise<EventsResult> {
  const relay = await startRelayChild({
    simulatorDelayMs: 2000,
    env: {
      TPS_WEBHOOK_ALLOW_HTTP: 'true',
      TPS_WEBHOOK_ALLOW_NETWORKS: '127.0.0.1/32',
      TPS_EVENT_VENDOR: VENDOR,
    },
  });
  const pool = new Pool(relay.origin, {
    connections: options.eventsClients,
    pipelining: 1,
    keepAliveTimeout: 60_000,
  });
  const admin = new Pool(relay.origin, { connections: 2, pipelining: 1 });
  const authorization = basicAuth(relay.account);
  const errors = new ErrorTally();
  const full = new Window();
  const paced = new Window();
  const fullHook = new WebhookReceiver(full);
  const pacedHook = new WebhookReceiver(paced);
  const reader = new LongPollReader(
    new Pool(relay.origin, { connections: 1, pipelining: 1 }),
    authorization,
    [full, paced],
    errors,
  );
  try {
    const simulators = await createSimulators(pool, relay.account, options.eventsClients);
    const poses = simulators.map((s) => new Pos(pool, s.terminal_id, s));
    const fullHookId = await fullHook.register(admin, authorization);
    reader.start();

    const warmup = new Tally();
    await drive(poses, options.warmupSeconds, warmup, 'warm-ev');
    if (warmup.flows === 0)
      throw new Error(`no flow completed in warm-up: ${warmup.errors.describe()}`);

    const token = await tokenNow(admin, authorization);
    const fullRun = await measureWindow(relay, poses, full, options.eventsSeconds, 'full-ev');
    const fullBacklog = await webhookBacklog(admin, authorization, fullHookId);
    const deliveredBefore = fullHook.total;
    await sleep(IDLE_DELIVERY_MS);
    const idleDeliveredPerSecond = ((fullHook.total - deliveredBefore) / IDLE_DELIVERY_MS) * 1000;
    // The first webhook stays behind (see the figures): a fresh one for the paced window.
    await postJson(admin, '/pos/v1/webhook/delete', authorization, { id: fullHookId });
    const pacedHookId = await pacedHook.register(admin, authorization);
    const pacedRun = await measureWindow(
      relay,
      poses,
      paced,
      options.eventsSeconds,
      'paced-ev',
      options.eventsPacedFlows,
    );
    const pacedBacklog = await webhookBacklog(admin, authorization, pacedHookId);
    const drainStarted = performance.now();
    let drainMs: number | undefined;
    for (;;) {
      if ((await webhookBacklog(admin, authorization, pacedHookId)) === 0) {
        drainMs = performance.now() - drainStarted;
        break;
      }
      if (performance.now() - drainStarted > DRAIN_TIMEOUT_MS) break;
      await sleep(100);
    }
    await sleep(200);
    await reader.stop();

    const [fullWritten, pacedWritten] = await countWritten(admin, authorization, token, [
      full,
      paced,
    ]);
    const result = (
      window: Window,
      run: Awaited<ReturnType<typeof measureWindow>>,
      written: Written,
      backlogAtEnd: number,
      hook: WebhookReceiver,
      pacedAt: number | undefined,
    ): WindowResult => {
      const seconds = (window.end - window.start) / 1000;
      return {
        pacedAt,
        seconds,
        flows: run.tally.flows,
        flowsPerSecond: run.tally.flows / seconds,
        flowErrors: run.tally.errors.total,
        flowErrorKinds: run.tally.errors.describe(),
        written,
        reader: window.reader.summary(),
        webhook: window.webhook.summary(),
        deliveredPerSecond: window.deliveries / seconds,
        backlogAtEnd,
        undelivered: Math.max(0, written.transaction - hook.received),
        cpu: run.cpu,
      };
    };
    return {
      clients: poses.length,
      full: result(full, fullRun, fullWritten!, fullBacklog, fullHook, undefined),
      paced: result(
        paced,
        pacedRun,
        pacedWritten!,
        pacedBacklog,
        pacedHook,
        options.eventsPacedFlows,
      ),
      drainMs,
      idleDeliveredPerSecond,
      wokenAnswers: reader.wokenAnswers,
      catchUpAnswers: reader.catchUpAnswers,
      eventsPerAnswer: reader.answers ? reader.eventsRead / reader.answers : 0,
      duplicates: fullHook.duplicates + pacedHook.duplicates,
      badSignatures: fullHook.badSignatures + pacedHook.badSignatures,
      errors: errors.total,
      errorKinds: errors.describe(),
    };
  } finally {
    await reader.stop().catch(() => undefined);
    await fullHook.close();
    await pacedHook.close();
    await pool.close();
    await admin.close();
    await relay.dispose();
  }
}
