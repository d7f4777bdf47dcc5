/**
 * Scale-out end to end: two relay processes (`tps cloud`) on one PostgreSQL
 * (TPS_DATABASE_URL) and one Mosquitto (TPS_MQTT_URL), simulated terminals on the real
 * agent path (hosted by the leading relay, journals in the shared data directory), and a
 * POS whose requests go to either relay, as behind a load balancer.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FLEET_SETTING_NAMES, type SimulatorCreateResponse } from '../protocol/index.js';
import { forgetOnBroker } from './support/e2e-external-broker.js';
import {
  eventually,
  fileText,
  readerRecord,
  readerRuns,
  startRelayChild,
  type RelayChild,
} from './support/e2e-parts.js';
import { post, type ApiResponse } from './support/relay.js';

const DATABASE_URL = process.env.DATABASE_URL;
const MQTT_URL = process.env.MQTT_URL;
const TRANSACTION_EVENT = 'eu.vendor.api.pos.v0.Transaction';
const ACCOUNT = { username: 'cluster-account', password: 'cluster-account-password' };
const OPERATOR = { username: 'cluster-operator', password: 'cluster-operator-password' };

describe('two relays on one PostgreSQL and one Mosquitto', () => {
  if (!DATABASE_URL || !MQTT_URL) {
    it.skip(`SKIPPED, ${!DATABASE_URL ? 'DATABASE_URL' : 'MQTT_URL'} is not set (e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/test MQTT_URL=mqtt://127.0.0.1:1883): purchases alternating between relays, long polls woken across relays, duplicate creates over both, a relay killed mid-payment`, () => {});
    return;
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'tps-cluster-'));
  const database = `tps_cluster_${process.pid}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  const databaseUrl = (() => {
    const url = new URL(DATABASE_URL);
    url.pathname = `/${database}`;
    return url.toString();
  })();
  const env = {
    TPS_DATA_DIR: dir,
    TPS_DATABASE_URL: databaseUrl,
    TPS_MQTT_URL: MQTT_URL,
    TPS_ACCOUNT_USERNAME: ACCOUNT.username,
    TPS_ACCOUNT_PASSWORD: ACCOUNT.password,
    TPS_OPERATOR_USERNAME: OPERATOR.username,
    TPS_OPERATOR_PASSWORD: OPERATOR.password,
    TPS_DEFAULT_SIMULATOR: 'false',
    TPS_SIMULATOR_DELAY_MS: '1500',
    // Short deadlines, so that the leader's background work shows within the test.
    TPS_PAUSE_TIMEOUT_S: '3',
    TPS_GRACE_PERIOD_S: '4',
    TPS_WEBHOOK_ALLOW_HTTP: 'true',
    TPS_WEBHOOK_ALLOW_NETWORKS: '127.0.0.1/32',
    ...(process.env.TEST_LOG ? { TPS_LOG_LEVEL: 'debug' } : {}),
  };
  const relays: RelayChild[] = [];
  const terminals: string[] = [];
  const output = () => relays.map((r, i) => `--- relay ${i} ---\n${r.output()}`).join('\n');
  /** What the webhook receiver got, in arrival order: each delivered CloudEvent. */
  const delivered: Array<{ id: string; type: string; data: { id?: string; state?: string } }> = [];
  const receiver: Server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      delivered.push(JSON.parse(body));
      response.writeHead(204).end();
    });
  });

  beforeAll(async () => {
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    await admin.connect();
    await admin.query(`CREATE DATABASE ${database}`);
    // Started together, as an orchestrator would: migrations and first-start set-up race.
    relays.push(...(await Promise.all([startRelayChild(env), startRelayChild(env)])));
  }, 60_000);

  afterAll(async () => {
    await Promise.all(relays.map((r) => r.stop()));
    receiver.close();
    await forgetOnBroker(MQTT_URL, {
      clientIds: terminals.map((t) => `agent-${t}`),
      terminalIds: terminals,
    });
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  const live = () => relays.filter((r) => r.running);
  async function metric(relay: RelayChild, series: string): Promise<number> {
    const text = await (await fetch(`${relay.baseUrl.replace(/\/pos$/, '')}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`${series} `));
    return line === undefined ? 0 : Number(line.slice(series.length + 1));
  }

  async function newTerminal(via: RelayChild): Promise<SimulatorCreateResponse> {
    const res = await post(via.baseUrl, 'v1', '/simulator/create', {}, ACCOUNT);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const sim = res.body as SimulatorCreateResponse;
    terminals.push(sim.terminal_id);
    // Hosted by whichever relay leads; connected once its agent is on the broker.
    await eventually(
      () => call(live()[0]!, sim, '/terminal/status', {}),
      (r) => r.body?.status?.connected === true,
      { ms: 20_000, what: `terminal ${sim.terminal_id} to connect`, context: output },
    );
    return sim;
  }

  function call(
    via: RelayChild,
    sim: SimulatorCreateResponse,
    operation: string,
    body: Record<string, unknown>,
  ): Promise<ApiResponse> {
    return post(via.baseUrl, 'v1', operation, { terminal_id: sim.terminal_id, ...body }, sim);
  }

  it('pays with requests alternating between the relays; long polls wake for changes the other ingested', async () => {
    const [a, b] = relays as [RelayChild, RelayChild];
    const sims = await Promise.all([
      newTerminal(a),
      newTerminal(b),
      newTerminal(a),
      newTerminal(b),
    ]);
    const appliedBefore = await Promise.all(
      relays.map((r) => metric(r, 'tps_agent_reports_total{outcome="applied"}')),
    );
    await Promise.all(
      sims.map(async (sim, i) => {
        for (let round = 0; round < 3; round++) {
          const [first, second] = (i + round) % 2 === 0 ? [a, b] : [b, a];
          const externalId = `alt-${round}`;
          const created = await call(first, sim, '/transaction/purchase', {
            external_id: externalId,
            requested_amount: 1000 + round,
            currency: 'EUR',
            wait_seconds: 0,
          });
          expect(created.status, JSON.stringify(created.body)).toBe(200);
          // Parked on the other relay for up to 60 s: the reader's result arrives through
          // either relay (shared subscription) and must wake it within seconds.
          const began = Date.now();
          const polled = await call(second, sim, '/transaction/get', {
            external_id: externalId,
            wait_seconds: 60,
          });
          expect(polled.body.transaction, output()).toMatchObject({
            state: 'AWAITING_CONFIRM',
            result_code: 'SUCCESS',
            total_amount: 1000 + round,
          });
          expect(Date.now() - began).toBeLessThan(20_000);
          const confirmed = await call(first, sim, '/transaction/confirm', {
            external_id: externalId,
            result_code: 'SUCCESS',
          });
          expect(confirmed.body.transaction.state).toBe('CONFIRMED');
          const seen = await call(second, sim, '/transaction/get', { external_id: externalId });
          expect(seen.body.transaction.state).toBe('CONFIRMED');
        }
      }),
    );
    // Both relays took agent traffic.
    const appliedAfter = await Promise.all(
      relays.map((r) => metric(r, 'tps_agent_reports_total{outcome="applied"}')),
    );
    expect(appliedAfter[0]! - appliedBefore[0]!).toBeGreaterThan(0);
    expect(appliedAfter[1]! - appliedBefore[1]!).toBeGreaterThan(0);
  }, 120_000);

  /** An event-list wait for the terminal's transaction events, parked on `via`. */
  async function parkEventWait(via: RelayChild, sim: SimulatorCreateResponse) {
    const filter = { subject: { eq: sim.terminal_id }, type: { eq: TRANSACTION_EVENT } };
    const first = await post(via.baseUrl, 'v1', '/event/list', { filter }, sim);
    expect(first.status).toBe(200);
    const waiting = post(
      via.baseUrl,
      'v1',
      '/event/list',
      { next_token: first.body.next_token, wait_seconds: 60 },
      sim,
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    // Wrapped: an async function's returned promise would be awaited with it.
    return { waiting };
  }
  const externalIdsOf = (answer: ApiResponse): string[] =>
    answer.body.events.map((e: { data: { external_id: string } }) => e.data.external_id);

  it('wakes an event-list wait on one relay for a transaction created through the other', async () => {
    const [a, b] = relays as [RelayChild, RelayChild];
    const sim = await newTerminal(a);
    const { waiting } = await parkEventWait(b, sim);
    const began = Date.now();
    await call(a, sim, '/transaction/purchase', {
      external_id: 'event-wake',
      requested_amount: 500,
      currency: 'EUR',
      wait_seconds: 0,
    });
    const woken = await waiting;
    expect(Date.now() - began).toBeLessThan(5000);
    expect(externalIdsOf(woken)).toContain('event-wake');
  }, 60_000);

  it('re-reads what is parked after losing its LISTEN connection: a change made meanwhile still wakes it', async () => {
    const [a, b] = relays as [RelayChild, RelayChild];
    const sim = await newTerminal(a);
    const { waiting } = await parkEventWait(b, sim);
    // Both relays' listening sessions dropped; the purchase commits while they reconnect.
    await admin.query(
      `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE query = 'LISTEN tps_changes' AND datname = $1`,
      [database],
    );
    const began = Date.now();
    await call(a, sim, '/transaction/purchase', {
      external_id: 'missed-notify',
      requested_amount: 100020, // the reader takes 30 s: no later event of it wakes the wait
      currency: 'EUR',
      wait_seconds: 0,
    });
    const woken = await waiting;
    expect(Date.now() - began).toBeLessThan(10_000);
    expect(externalIdsOf(woken)).toContain('missed-notify');
  }, 60_000);

  it('runs background work once: webhook deliveries, pause time-outs and grace-period commits', async () => {
    const [leader, follower] = (await leaderFirst()) as [RelayChild, RelayChild];
    // Registered through the relay that does not deliver: the leader takes it up.
    const hook = await post(
      follower.baseUrl,
      'v1',
      '/webhook/create',
      { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook` },
      ACCOUNT,
    );
    if (hook.status !== 200) throw new Error(JSON.stringify(hook.body));
    const [sim, other] = await Promise.all([newTerminal(follower), newTerminal(leader)]);
    const paused = await call(follower, sim, '/transaction/purchase', {
      external_id: 'left-paused',
      requested_amount: 1200,
      currency: 'EUR',
      options: { on_customer_identified: { pause: true } },
      wait_seconds: 20,
    });
    expect(paused.body.transaction.state).toBe('AWAITING_CONTINUE');
    const bought = await call(leader, other, '/transaction/purchase', {
      external_id: 'left-confirmed',
      requested_amount: 1300,
      currency: 'EUR',
      wait_seconds: 0,
    });
    expect(bought.status).toBe(200);
    // The pause times out (3 s) in the leader: aborted once.
    const aborted = await eventually(
      () => call(follower, sim, '/transaction/get', { external_id: 'left-paused' }),
      (r) => r.body.transaction.state !== 'AWAITING_CONTINUE',
      { ms: 15_000, what: 'the pause to time out', context: output },
    );
    expect(aborted.body.transaction).toMatchObject({
      state: 'AWAITING_CONFIRM',
      result_code: 'ABORTED',
    });
    await eventually(
      () =>
        call(follower, other, '/transaction/get', {
          external_id: 'left-confirmed',
          wait_seconds: 5,
        }),
      (r) => r.body.transaction.state === 'AWAITING_CONFIRM',
      { ms: 15_000, what: 'the purchase to finish' },
    );
    await call(follower, other, '/transaction/confirm', {
      external_id: 'left-confirmed',
      result_code: 'SUCCESS',
    });
    // The grace period (4 s) ends in the leader: committed once.
    await eventually(
      () => call(follower, other, '/transaction/get', { external_id: 'left-confirmed' }),
      (r) => r.body.transaction.state === 'COMMITTED',
      { ms: 20_000, what: 'the grace period to commit it', context: output },
    );
    // Every state each transaction went through reached the receiver exactly once.
    const ids = [paused.body.transaction.id, bought.body.transaction.id] as string[];
    const transitions = () =>
      delivered
        .filter((e) => ids.includes(e.data.id ?? ''))
        .map((e) => `${e.data.id === ids[0] ? 'paused' : 'bought'} ${e.data.state}`);
    await eventually(
      () => transitions(),
      (t) => t.includes('bought COMMITTED') && t.includes('paused AWAITING_CONFIRM'),
      { ms: 15_000, what: 'the deliveries', context: () => JSON.stringify(transitions()) },
    );
    expect(transitions().sort()).toEqual(
      [
        'paused PROCESSING',
        'paused AWAITING_CONTINUE',
        'paused AWAITING_CONFIRM',
        'bought PROCESSING',
        'bought AWAITING_CONFIRM',
        'bought CONFIRMED',
        'bought COMMITTED',
      ].sort(),
    );
    const eventIds = delivered.map((e) => e.id);
    expect(new Set(eventIds).size).toBe(eventIds.length);
  }, 90_000);

  it('takes up a webhook and a simulator announced while the leader was not listening', async () => {
    const [leader, follower] = (await leaderFirst()) as [RelayChild, RelayChild];
    // The relays' listening sessions are dropped again and again while the follower
    // announces what it created: only the leader's re-read, once it listens, finds them.
    let dropping = true;
    const dropped = (async () => {
      while (dropping) {
        await admin.query(
          `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
            WHERE query = 'LISTEN tps_changes' AND datname = $1`,
          [database],
        );
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();
    const hook = await post(
      follower.baseUrl,
      'v1',
      '/webhook/create',
      { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/missed` },
      ACCOUNT,
    );
    if (hook.status !== 200) throw new Error(JSON.stringify(hook.body));
    const created = await post(follower.baseUrl, 'v1', '/simulator/create', {}, ACCOUNT);
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const sim = created.body as SimulatorCreateResponse;
    await new Promise((resolve) => setTimeout(resolve, 300));
    dropping = false;
    await dropped;
    terminals.push(sim.terminal_id);
    await eventually(
      () => call(leader, sim, '/terminal/status', {}),
      (r) => r.body?.status?.connected === true,
      { ms: 20_000, what: 'the simulator created meanwhile to connect', context: output },
    );
    const bought = await call(leader, sim, '/transaction/purchase', {
      external_id: 'announced-unheard',
      requested_amount: 400,
      currency: 'EUR',
      wait_seconds: 0,
    });
    await eventually(
      () => delivered.filter((e) => e.data.id === bought.body.transaction.id),
      (events) => events.length > 0,
      { ms: 15_000, what: 'a delivery to the webhook created meanwhile', context: output },
    );
    const deleted = await post(
      follower.baseUrl,
      'v1',
      '/webhook/delete',
      { id: hook.body.webhook.id },
      ACCOUNT,
    );
    expect(deleted.status).toBe(200);
  }, 60_000);

  it('makes one transaction of 50 concurrent duplicate creates spread over both relays', async () => {
    const sim = await newTerminal(relays[1]!);
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        call(relays[i % 2]!, sim, '/transaction/purchase', {
          external_id: 'dup-1',
          requested_amount: 700,
          currency: 'EUR',
          wait_seconds: 0,
        }),
      ),
    );
    expect(answers.map((r) => r.status)).toEqual(answers.map(() => 200));
    const ids = new Set(answers.map((r) => r.body.transaction.id));
    expect(ids.size).toBe(1);
    const unconfirmed = await call(relays[0]!, sim, '/transaction/unconfirmed', {});
    expect(unconfirmed.body.transactions).toHaveLength(1);
    const done = await call(relays[0]!, sim, '/transaction/get', {
      external_id: 'dup-1',
      wait_seconds: 30,
    });
    expect(done.body.transaction.state).toBe('AWAITING_CONFIRM');
    const stateFile = path.join(dir, 'simulators', sim.terminal_id, 'reader.jsonl');
    expect(readerRuns(stateFile, [...ids][0] as string)).toHaveLength(1);
  }, 60_000);

  /** A POS behind a load balancer: a request that fails on a dead relay goes to a live one. */
  async function balanced(
    sim: SimulatorCreateResponse,
    preferred: number,
    operation: string,
    body: Record<string, unknown>,
  ): Promise<ApiResponse> {
    for (let attempt = 0; ; attempt++) {
      const pool = live();
      const via = pool[(preferred + attempt) % pool.length]!;
      try {
        return await call(via, sim, operation, body);
      } catch (error) {
        if (attempt > 50) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  }

  /** Pays on each terminal through both relays, and SIGKILLs `victim()` mid-payment. */
  async function payThroughAKill(
    sims: SimulatorCreateResponse[],
    externalId: string,
    victim: () => Promise<RelayChild>,
  ) {
    const payments = sims.map(async (sim, i) => {
      const created = await balanced(sim, i, '/transaction/purchase', {
        external_id: externalId,
        requested_amount: 2000 + i,
        currency: 'EUR',
        wait_seconds: 0,
      });
      expect(created.status).toBe(200);
      const result = await eventually(
        () =>
          balanced(sim, i + 1, '/transaction/get', { external_id: externalId, wait_seconds: 5 }),
        (r) => r.status === 200 && r.body.transaction.state !== 'PROCESSING',
        { ms: 90_000, every: 100, what: `${sim.terminal_id} to finish`, context: output },
      );
      // The POS confirms what it was told: SUCCESS keeps the sale, anything else ends it.
      const confirmed = await balanced(sim, i, '/transaction/confirm', {
        external_id: externalId,
        result_code: result.body.transaction.result_code,
      });
      return { sim, result: result.body.transaction, confirmed: confirmed.body.transaction };
    });
    // Mid-payment: the readers work for 1.5 s.
    const killed = await victim();
    await new Promise((resolve) => setTimeout(resolve, 600));
    await killed.stop('SIGKILL');
    const outcomes = await Promise.all(payments);
    for (const { sim, result } of outcomes) {
      // Nothing doubled, nothing left behind.
      const stateFile = path.join(dir, 'simulators', sim.terminal_id, 'reader.jsonl');
      expect(readerRuns(stateFile, result.id), fileText(stateFile)).toHaveLength(1);
      const unconfirmed = await call(live()[0]!, sim, '/transaction/unconfirmed', {});
      expect(unconfirmed.body.transactions).toEqual([]);
    }
    return outcomes;
  }

  /** The live relays, the one leading first. */
  async function leaderFirst(): Promise<RelayChild[]> {
    const leader = await leaderOf(live());
    return [leader, ...live().filter((r) => r !== leader)];
  }

  const leaderOf = async (pool: RelayChild[]) => {
    const flags = await Promise.all(pool.map((r) => metric(r, 'tps_leader')));
    expect(flags.reduce((a, b) => a + b, 0)).toBe(1);
    return pool[flags.indexOf(1)]!;
  };

  it('configures and diagnoses a terminal through either relay: the answer reaches the relay that asked', async () => {
    const [a, b] = relays as [RelayChild, RelayChild];
    const sim = await newTerminal(a);
    const scope = { terminal_id: sim.terminal_id };
    const set = await post(
      a.baseUrl,
      'v1',
      '/fleet/config/set',
      { scope, config: { heartbeat_s: 9 } },
      ACCOUNT,
    );
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    await eventually(
      () => post(b.baseUrl, 'v1', '/fleet/config/get', { scope }, ACCOUNT),
      (r) => r.body?.terminals?.[0]?.in_sync === true,
      { ms: 20_000, what: 'the hosted agent to apply the configuration', context: output },
    );
    for (const via of [a, b, a, b]) {
      const doctor = await post(
        via.baseUrl,
        'v1',
        '/fleet/diagnostics',
        { terminal_id: sim.terminal_id, kind: 'doctor' },
        ACCOUNT,
      );
      expect(doctor.status, `${JSON.stringify(doctor.body)}\n${output()}`).toBe(200);
      expect(doctor.body.doctor.checks.map((c: { title: string }) => c.title).join('\n')).toMatch(
        /broker: connected/,
      );
    }
  }, 60_000);

  it("takes the relay-wide layer and the merchants' list on either relay: the terminals apply it, the other refuses at once", async () => {
    const sim = await newTerminal(relays[0]!);
    // Through the relay that does not host the terminal's agent.
    const leader = await leaderOf(live());
    const follower = live().find((r) => r !== leader)!;
    const narrowed = await post(
      follower.baseUrl,
      'v1',
      '/fleet/config/merchant-settings/set',
      { settings: ['heartbeat_s'] },
      OPERATOR,
    );
    expect(narrowed.status, JSON.stringify(narrowed.body)).toBe(200);
    const set = await post(
      follower.baseUrl,
      'v1',
      '/fleet/config/set',
      { scope: { relay: true }, config: { log_level: 'warn' } },
      OPERATOR,
    );
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    const scope = { terminal_id: sim.terminal_id };
    await eventually(
      () => post(leader.baseUrl, 'v1', '/fleet/config/get', { scope }, ACCOUNT),
      (r) =>
        r.body?.terminals?.[0]?.in_sync === true &&
        r.body.terminals[0].desired.config.log_level === 'warn',
      { ms: 20_000, what: 'the agent to apply the relay-wide layer', context: output },
    );
    const refused = await post(
      leader.baseUrl,
      'v1',
      '/fleet/config/set',
      { scope, config: { log_level: 'debug' } },
      ACCOUNT,
    );
    expect([refused.status, refused.body.error?.code]).toEqual([403, 'FORBIDDEN']);
    for (const [operation, body] of [
      ['/fleet/config/set', { scope: { relay: true }, config: {} }],
      [
        '/fleet/config/merchant-settings/set',
        {
          settings: [...FLEET_SETTING_NAMES],
        },
      ],
    ] as const) {
      expect((await post(leader.baseUrl, 'v1', operation, body, OPERATOR)).status).toBe(200);
    }
  }, 60_000);

  it('completes every payment through the survivor when a relay is killed mid-payment', async () => {
    const sims = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => newTerminal(relays[i % 2]!)));
    // The follower dies: the terminals (hosted by the leader) carry on, and every request,
    // report and acknowledgement it had in hand is taken up by the survivor.
    const outcomes = await payThroughAKill(sims, 'follower-killed', async () => {
      const leader = await leaderOf(relays);
      return relays.find((r) => r !== leader)!;
    });
    for (const { result, confirmed } of outcomes) {
      expect(result, output()).toMatchObject({ state: 'AWAITING_CONFIRM', result_code: 'SUCCESS' });
      expect(confirmed.state).toBe('CONFIRMED');
    }
  }, 150_000);

  it('moves the background work and the simulated terminals when the leading relay is killed mid-payment', async () => {
    relays.push(await startRelayChild(env));
    const sims = await Promise.all([0, 1, 2, 3].map((i) => newTerminal(live()[i % 2]!)));
    const outcomes = await payThroughAKill(sims, 'leader-killed', () => leaderOf(live()));
    // The terminals lost power with their host: each payment ends as its reader recorded it
    // (finished, or aborted by the power cut), once, and the POS was told exactly that.
    for (const { sim, result, confirmed } of outcomes) {
      const stateFile = path.join(dir, 'simulators', sim.terminal_id, 'reader.jsonl');
      const record = readerRecord(stateFile, result.id);
      const charged = record?.phase === 'COMPLETED' && record.result_code === 'SUCCESS';
      expect(result.state, output()).toBe('AWAITING_CONFIRM');
      expect(result.result_code === 'SUCCESS', fileText(stateFile)).toBe(charged);
      expect(confirmed.state).toBe(charged ? 'CONFIRMED' : 'COMMITTED');
    }
    expect(live()).toHaveLength(1);
    expect(await metric(live()[0]!, 'tps_leader')).toBe(1);
    // The survivor hosts the terminals now: a new payment goes through.
    const again = await call(live()[0]!, sims[0]!, '/transaction/purchase', {
      external_id: 'after-failover',
      requested_amount: 900,
      currency: 'EUR',
      wait_seconds: 30,
    });
    expect(again.body.transaction).toMatchObject({
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
    });
  }, 150_000);

  it('resumes webhook deliveries in the new leader: every event of the log reaches the receiver', async () => {
    const survivor = live()[0]!;
    const log: string[] = [];
    let token: string | undefined;
    for (;;) {
      const page = await post(
        survivor.baseUrl,
        'v1',
        '/event/list',
        token
          ? { next_token: token, wait_seconds: 0 }
          : { filter: { type: { eq: TRANSACTION_EVENT } }, wait_seconds: 0 },
        ACCOUNT,
      );
      expect(page.status).toBe(200);
      log.push(...page.body.events.map((e: { id: string }) => e.id));
      token = page.body.next_token;
      if (page.body.events.length === 0) break;
    }
    // From the first transaction event the webhook got (registered in an earlier test) on.
    const firstDelivered = delivered.find((e) => e.type === TRANSACTION_EVENT);
    expect(firstDelivered).toBeDefined();
    const expected = log.slice(log.indexOf(firstDelivered!.id));
    expect(expected.length).toBeGreaterThan(10);
    await eventually(
      () => new Set(delivered.map((e) => e.id)),
      (got) => expected.every((id) => got.has(id)),
      { ms: 30_000, what: 'every event to be delivered', context: output },
    );
  }, 60_000);
});
