/**
 * Hosted simulated terminals keep their broker credential across a change of leader.
 * Two relay processes on one PostgreSQL and a Mosquitto that signs agents in from the
 * password file `tps broker mosquitto` wrote (run by the test on ports of its own): the
 * leader, hosting the simulators, is killed mid-payment and never comes back; the
 * survivor hosts them and their payments complete, with no new password file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimulatorCreateResponse } from '../protocol/index.js';
import { eventually, runTpsToEnd, startRelayChild, type RelayChild } from './support/e2e-parts.js';
import {
  MOSQUITTO_BINARY,
  startPasswordMosquitto,
  type PasswordMosquitto,
} from './support/password-mosquitto.js';
import { post, type ApiResponse } from './support/relay.js';

const DATABASE_URL = process.env.DATABASE_URL;
const ACCOUNT = { username: 'failover-account', password: 'failover-account-password' };
const RELAY = { username: 'tps-relay', password: 'relay-broker-password-for-the-test' };
const missing = !DATABASE_URL
  ? 'DATABASE_URL is not set'
  : !MOSQUITTO_BINARY
    ? 'no mosquitto binary'
    : '';

describe('simulated terminals on a password-file Mosquitto when the leading relay dies', () => {
  if (missing) {
    it.skip(`SKIPPED, ${missing} (e.g. DATABASE_URL=postgres://postgres@127.0.0.1:5432/test, apt-get install mosquitto): the survivor's simulators sign in with the credential the broker knows`, () => {});
    return;
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'tps-failover-'));
  const brokerDir = path.join(dir, 'broker');
  const database = `tps_failover_${process.pid}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  const databaseUrl = (() => {
    const url = new URL(DATABASE_URL!);
    url.pathname = `/${database}`;
    return url.toString();
  })();
  let broker: PasswordMosquitto | undefined;
  const relays: RelayChild[] = [];
  const env = () => ({
    TPS_DATA_DIR: path.join(dir, 'data'),
    TPS_DATABASE_URL: databaseUrl,
    TPS_MQTT_URL: broker!.relayUrl,
    TPS_MQTT_USERNAME: RELAY.username,
    TPS_MQTT_PASSWORD: RELAY.password,
    TPS_ACCOUNT_USERNAME: ACCOUNT.username,
    TPS_ACCOUNT_PASSWORD: ACCOUNT.password,
    TPS_DEFAULT_SIMULATOR: 'false',
    TPS_SIMULATOR_DELAY_MS: '1500',
    ...(process.env.TEST_LOG ? { TPS_LOG_LEVEL: 'debug' } : {}),
  });
  const output = () =>
    [
      ...relays.map((r, i) => `--- relay ${i} ---\n${r.output()}`),
      `--- mosquitto ---\n${broker?.output()}`,
    ].join('\n');

  /** What the operator runs after every change of terminals: the files, then a reload. */
  async function writeBrokerFiles(): Promise<void> {
    const result = await runTpsToEnd(['broker', 'mosquitto', '--out', brokerDir], {
      TPS_DATA_DIR: path.join(dir, 'data'),
      TPS_DATABASE_URL: databaseUrl,
      TPS_MQTT_USERNAME: RELAY.username,
      TPS_MQTT_PASSWORD: RELAY.password,
    });
    if (result.code !== 0) throw new Error(`tps broker mosquitto failed:\n${result.stderr}`);
  }

  beforeAll(async () => {
    await admin.connect();
    await admin.query(`CREATE DATABASE ${database}`);
    await writeBrokerFiles();
    broker = await startPasswordMosquitto(dir, brokerDir);
    relays.push(...(await Promise.all([startRelayChild(env()), startRelayChild(env())])));
  }, 60_000);

  afterAll(async () => {
    await Promise.all(relays.map((r) => r.stop('SIGKILL')));
    await broker?.stop();
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
    rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  const live = () => relays.filter((r) => r.running);
  async function isLeader(relay: RelayChild): Promise<boolean> {
    const text = await (await fetch(`${relay.baseUrl.replace(/\/pos$/, '')}/metrics`)).text();
    return text.split('\n').includes('tps_leader 1');
  }
  const call = (
    via: RelayChild,
    sim: SimulatorCreateResponse,
    operation: string,
    body: Record<string, unknown>,
  ): Promise<ApiResponse> =>
    post(via.baseUrl, 'v1', operation, { terminal_id: sim.terminal_id, ...body }, sim);

  it('the survivor hosts the simulators and their payments complete, without the old leader', async () => {
    const sims: SimulatorCreateResponse[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await post(relays[i]!.baseUrl, 'v1', '/simulator/create', {}, ACCOUNT);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      sims.push(res.body as SimulatorCreateResponse);
    }
    // The new agents are known to Mosquitto once the operator wrote the files and reloaded.
    await writeBrokerFiles();
    broker!.reload();
    for (const sim of sims) {
      await eventually(
        () => call(relays[0]!, sim, '/terminal/status', {}),
        (r) => r.body?.status?.connected === true,
        { ms: 20_000, what: `${sim.terminal_id} to connect`, context: output },
      );
    }
    const leader = (await isLeader(relays[0]!)) ? relays[0]! : relays[1]!;
    const survivor = relays.find((r) => r !== leader)!;

    // Mid-payment (the readers work for 1.5 s) the leader dies, for good.
    for (const sim of sims) {
      const created = await call(survivor, sim, '/transaction/purchase', {
        external_id: 'before-failover',
        requested_amount: 1000,
        currency: 'EUR',
        wait_seconds: 0,
      });
      expect(created.status).toBe(200);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
    const heardBefore = broker!.output().length;
    await leader.stop('SIGKILL');
    expect(live()).toEqual([survivor]);

    for (const sim of sims) {
      const interrupted = await eventually(
        () =>
          call(survivor, sim, '/transaction/get', {
            external_id: 'before-failover',
            wait_seconds: 5,
          }),
        (r) => r.status === 200 && r.body.transaction.state !== 'PROCESSING',
        { ms: 45_000, what: `${sim.terminal_id} to finish its payment`, context: output },
      );
      expect(interrupted.body.transaction.state).toBe('AWAITING_CONFIRM');
      await call(survivor, sim, '/transaction/confirm', {
        external_id: 'before-failover',
        result_code: interrupted.body.transaction.result_code,
      });
      // And a new payment through the survivor, on the simulator it now hosts.
      const again = await call(survivor, sim, '/transaction/purchase', {
        external_id: 'after-failover',
        requested_amount: 900,
        currency: 'EUR',
        wait_seconds: 30,
      });
      expect(again.body.transaction, output()).toMatchObject({
        state: 'AWAITING_CONFIRM',
        result_code: 'SUCCESS',
      });
    }
    expect(await isLeader(survivor)).toBe(true);
    // No agent was refused after the change of host.
    expect(broker!.output().slice(heardBefore)).not.toMatch(/not authori[sz]ed/i);
  }, 150_000);
});
