/**
 * The relay killed with SIGKILL in the middle of a payment and started again on the same
 * data directory, while the agent (its own process, `tps agent --config FILE`, with the
 * emulated reader in process and the reader's memory in a file) keeps running. The
 * embedded broker lives in the relay, so this is also the broker's restart: every session
 * it held is gone. Both come back on the same ports (chosen free beforehand), as a
 * restarted service does, so the agent reconnects to the address it knows.
 *
 * The POS follows the spec's rule: it repeats the create (same external_id) until the
 * transaction leaves PROCESSING, through the outage. It must end with the reader's true
 * result, and the reader must have run the payment once.
 *
 * Each scenario has its own terminal and agent: an agent whose connections keep dying
 * young backs off longer and longer (by design), which would only slow the next scenario.
 *
 * Each agent reaches the broker through a "door" (support/e2e-broker-door.ts), a TCP hop
 * that lets it through a set time after the restarted broker first accepts connections,
 * so that when it comes back does not depend on its random back-off: 500 ms for the
 * scenarios. The last test lets it through the moment the relay hears reports, which the
 * relay is not ready for (a bug, see there) and an agent's own back-off hits by chance.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { relayHearsReports, startBrokerDoor, type BrokerDoor } from './support/e2e-broker-door.js';
import {
  agentJournalText,
  eventually,
  fileText,
  freePorts,
  posFor,
  readerLines,
  readerRecord,
  readerRuns,
  registerTerminal,
  startAgentProcess,
  writeAgentConfig,
  startRelayChild,
  type RelayChild,
  type TpsChild,
} from './support/e2e-parts.js';
import type { ApiResponse } from './support/relay.js';

const ACCOUNT = { username: 'e2e-restart-account', password: 'e2e-restart-password' };
/** An ordinary payment on the emulated reader takes this long: time to kill the relay. */
const READER_DELAY_MS = 1500;

describe('e2e: the relay (and its embedded broker) killed mid-payment, the agent survives', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tps-e2e-restart-'));
  let env: Record<string, string>;
  let relay: RelayChild | undefined;
  let baseUrl = '';
  /** Every relay process started, for the failure messages. */
  const relays: RelayChild[] = [];
  const relayOutput = () => relays.map((r) => r.output()).join('\n--- restarted ---\n');
  const agents: TpsChild[] = [];
  const doors: BrokerDoor[] = [];

  async function startRelay(): Promise<void> {
    relay = await startRelayChild(env);
    baseUrl = relay.baseUrl;
    relays.push(relay);
  }

  async function killRelay(): Promise<void> {
    const current = relay;
    relay = undefined;
    await current?.stop('SIGKILL');
  }

  /**
   * A terminal registered on the relay, its agent running and connected through a door
   * that lets it back 500 ms after the broker listens again (or when `gate` says).
   */
  async function terminalWithAgent(name: string, gate?: () => Promise<void>) {
    const home = path.join(dir, name);
    mkdirSync(home);
    const stateFile = path.join(home, 'reader.jsonl');
    const terminal = await registerTerminal(baseUrl, ACCOUNT, { battery: true });
    expect(terminal.agent.broker_url).toBe(`mqtt://127.0.0.1:${env.TPS_MQTT_PORT}`);
    const door = await startBrokerDoor(
      { host: '127.0.0.1', port: Number(env.TPS_MQTT_PORT) },
      gate ? { gate } : { holdMs: 500 },
    );
    doors.push(door);
    const configFile = writeAgentConfig(home, terminal, {
      reader: { emulated: { state_file: 'reader.jsonl', delay_ms: READER_DELAY_MS } },
      broker: { url: door.url },
    });
    const agent = startAgentProcess(configFile);
    agents.push(agent);
    const pos = posFor(() => baseUrl, terminal);
    const context = () =>
      `--- agent output ---\n${agent.output()}\n--- relay output ---\n${relayOutput()}` +
      `\n--- reader memory ---\n${fileText(stateFile)}` +
      `\n--- ${agentJournalText(path.join(home, 'agent-data'))}`;
    await eventually(
      () => pos('/terminal/status', {}),
      (r) => r.body?.status?.connected === true,
      { ms: 20_000, what: 'the agent connected', context },
    );

    /** A call made through the outage: repeated while the relay does not answer. */
    const call = (operation: string, body: Record<string, unknown>, ms = 30_000) =>
      eventually(
        () => pos(operation, body),
        (r: ApiResponse) => r.status < 500,
        { ms, every: 100, what: `${operation} answered`, context },
      );

    /** The POS's create, repeated (through connection errors) until it leaves PROCESSING. */
    const payUntilDone = (body: Record<string, unknown>, ms = 30_000) =>
      eventually(
        () => pos('/transaction/purchase', { currency: 'EUR', wait_seconds: 2, ...body }),
        (r) => r.status === 200 && r.body.transaction.state !== 'PROCESSING',
        { ms, every: 100, what: `${String(body.external_id)} to leave PROCESSING`, context },
      );

    /** The reader's record, once `done` holds for it. */
    const readerReaches = (
      id: string,
      done: (phase: string | undefined) => boolean,
      what: string,
      ms = 10_000,
    ) =>
      eventually(
        () => readerRecord(stateFile, id),
        (r) => done(r?.phase),
        { ms, what, context },
      );

    return { terminal, agent, door, pos, call, payUntilDone, readerReaches, stateFile, context };
  }

  beforeAll(async () => {
    const [httpPort, mqttPort] = await freePorts(2);
    env = {
      TPS_DATA_DIR: path.join(dir, 'relay-data'),
      TPS_PORT: String(httpPort),
      TPS_MQTT_PORT: String(mqttPort),
      TPS_ACCOUNT_USERNAME: ACCOUNT.username,
      TPS_ACCOUNT_PASSWORD: ACCOUNT.password,
      TPS_DEFAULT_SIMULATOR: 'false',
      ...(process.env.TEST_LOG ? { TPS_LOG_LEVEL: 'debug' } : {}),
    };
    await startRelay();
  }, 30_000);

  afterEach(async () => {
    for (const agent of agents.splice(0)) await agent.stop();
    for (const door of doors.splice(0)) await door.close();
  });

  afterAll(async () => {
    await killRelay();
    rmSync(dir, { recursive: true, force: true });
  });

  it('SIGKILL while the reader runs the payment: after the restart the POS gets the reader’s result, charged once', async () => {
    const t = await terminalWithAgent('running');
    const body = { external_id: 'restart-1', requested_amount: 4200 };
    const first = await t.pos('/transaction/purchase', {
      ...body,
      currency: 'EUR',
      wait_seconds: 0,
    });
    expect(first.status).toBe(200);
    expect(first.body.transaction.state).toBe('PROCESSING');
    const id = first.body.transaction.id as string;

    // The reader has the payment (its memory says so): now the relay dies.
    await t.readerReaches(id, (p) => p === 'IN_PROGRESS', 'the reader to start the payment');
    await killRelay();
    // The reader finishes while the relay (and the broker) are gone: the agent keeps the
    // result in its outbox.
    const record = await t.readerReaches(
      id,
      (p) => p === 'COMPLETED',
      'the reader to finish while the relay is down',
    );
    await expect(t.pos('/transaction/get', { external_id: 'restart-1' })).rejects.toThrow();

    await startRelay();
    const done = await t.payUntilDone(body);
    expect(done.body.transaction).toMatchObject({
      id,
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
      total_amount: 4200,
    });
    expect(done.body.transaction).toMatchObject({
      result_code: record!.result_code,
      total_amount: record!.details?.total_amount,
      reference: record!.details?.reference,
    });
    const confirmed = await t.pos('/transaction/confirm', {
      external_id: 'restart-1',
      result_code: 'SUCCESS',
    });
    expect(confirmed.body.transaction.state).toBe('CONFIRMED');

    // Charged once: one run of the reader for this transaction, and nothing else ran.
    expect(readerRuns(t.stateFile, id), fileText(t.stateFile)).toHaveLength(1);
    expect(readerLines(t.stateFile).every((r) => r.transaction_id === id)).toBe(true);

    // And the link carries the next payment as before.
    const next = await t.payUntilDone({ external_id: 'restart-1b', requested_amount: 1800 });
    const nextId = next.body.transaction.id as string;
    expect(next.body.transaction).toMatchObject({
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
      total_amount: 1800,
      reference: readerRecord(t.stateFile, nextId)?.details?.reference,
    });
    expect(readerRuns(t.stateFile, nextId)).toHaveLength(1);
  }, 45_000);

  it('SIGKILL right after the create is answered: the start (sent or not) runs once after the restart', async () => {
    const t = await terminalWithAgent('just-created');
    const body = { external_id: 'restart-2', requested_amount: 2100 };
    const first = await t.pos('/transaction/purchase', {
      ...body,
      currency: 'EUR',
      wait_seconds: 0,
    });
    expect(first.body.transaction.state).toBe('PROCESSING');
    const id = first.body.transaction.id as string;
    await killRelay();
    await startRelay();
    const done = await t.payUntilDone(body);
    const record = readerRecord(t.stateFile, id);
    expect(record, fileText(t.stateFile)).toMatchObject({
      phase: 'COMPLETED',
      result_code: 'SUCCESS',
    });
    expect(done.body.transaction).toMatchObject({
      id,
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
      reference: record?.details?.reference,
    });
    expect(readerRuns(t.stateFile, id)).toHaveLength(1);
    expect(readerLines(t.stateFile).every((r) => r.transaction_id === id)).toBe(true);
  }, 45_000);

  it('SIGKILL while paused at customer identification: continued after the restart, with a new amount', async () => {
    const t = await terminalWithAgent('paused');
    const paused = await t.payUntilDone({
      external_id: 'restart-3',
      requested_amount: 1000,
      options: { on_customer_identified: { pause: true } },
    });
    expect(paused.body.transaction.state).toBe('AWAITING_CONTINUE');
    const id = paused.body.transaction.id as string;
    expect(readerRecord(t.stateFile, id)?.phase).toBe('CUSTOMER_IDENTIFIED');
    await killRelay();
    await startRelay();
    const continued = await t.call('/transaction/continue', {
      external_id: 'restart-3',
      requested_amount: 1250,
      wait_seconds: 0,
    });
    expect(continued.status, JSON.stringify(continued.body)).toBe(200);
    const done = await eventually(
      () => t.pos('/transaction/get', { external_id: 'restart-3', wait_seconds: 2 }),
      (r) => r.body.transaction.state !== 'PROCESSING',
      { ms: 30_000, what: 'the continued payment to finish', context: t.context },
    );
    const record = readerRecord(t.stateFile, id);
    expect(record, fileText(t.stateFile)).toMatchObject({
      phase: 'COMPLETED',
      result_code: 'SUCCESS',
      continued_amount: 1250,
    });
    expect(done.body.transaction).toMatchObject({
      id,
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
      total_amount: 1250,
      reference: record?.details?.reference,
    });
    expect(readerRuns(t.stateFile, id)).toHaveLength(1);
  }, 45_000);

  // The agent back as soon as the restarted relay hears reports: it has subscribed to them
  // but (cloud/relay.ts) not yet installed the handler that applies them. With a fleet,
  // some agents' back-off lands there after every restart.
  it('the agent back the moment the restarted relay hears reports: its waiting result is applied, not lost', async () => {
    // Another terminal's credential tells when the relay listens (it acknowledges a report).
    const probe = await registerTerminal(baseUrl, ACCOUNT, {});
    const t = await terminalWithAgent('eager', () =>
      relayHearsReports(`mqtt://127.0.0.1:${env.TPS_MQTT_PORT}`, {
        terminalId: probe.terminal_id,
        username: probe.agent.username,
        password: probe.agent.password,
      }),
    );
    const body = { external_id: 'restart-4', requested_amount: 3300 };
    const first = await t.pos('/transaction/purchase', {
      ...body,
      currency: 'EUR',
      wait_seconds: 0,
    });
    const id = first.body.transaction.id as string;
    await t.readerReaches(id, (p) => p === 'IN_PROGRESS', 'the reader to start the payment');
    await killRelay();
    const record = await t.readerReaches(
      id,
      (p) => p === 'COMPLETED',
      'the reader to finish while the relay is down',
    );
    await startRelay();
    // Its outbox is re-sent within 10-20 s if unacknowledged (docs/agent.md): 25 s is enough.
    const done = await t.payUntilDone(body, 25_000);
    expect(t.door.passed).toBeGreaterThanOrEqual(2);
    expect(done.body.transaction).toMatchObject({
      id,
      state: 'AWAITING_CONFIRM',
      result_code: record!.result_code,
      reference: record!.details?.reference,
    });
    expect(readerRuns(t.stateFile, id)).toHaveLength(1);
  }, 45_000);
});
