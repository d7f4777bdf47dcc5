/**
 * End to end on an external broker: the relay (`tps cloud` with TPS_MQTT_URL, no embedded
 * broker) and the agent (`tps agent --config FILE`, `broker.url` = that broker) both on the
 * Mosquitto at MQTT_URL, a POS over HTTP. Runs only when MQTT_URL is set (a Mosquitto that
 * allows anonymous clients: it takes the agent's terminal credential as any other).
 *
 * The broker itself is never restarted here (it is the machine's, shared): the broker's
 * restart mid-payment is the embedded broker's, in e2e-relay-restart.test.ts. What an
 * external broker adds is the relay restarting while the broker and the agent stay up:
 * the agent never reconnects, so its reports reach the relay only through the broker's
 * sessions and the agent's own re-sends.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { forgetOnBroker } from './support/e2e-external-broker.js';
import {
  agentJournalText,
  eventually,
  fileText,
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

const MQTT_URL = process.env.MQTT_URL;
const ACCOUNT = { username: 'e2e-mosquitto-account', password: 'e2e-mosquitto-password' };

describe(`e2e on an external broker (Mosquitto at MQTT_URL${MQTT_URL ? ` = ${MQTT_URL}` : ''})`, () => {
  if (!MQTT_URL) {
    it.skip('SKIPPED, MQTT_URL is not set (e.g. MQTT_URL=mqtt://127.0.0.1:1883, anonymous allowed): relay and agent pay end to end through it; the relay restarted mid-payment', () => {});
    return;
  }
  const url = MQTT_URL;
  const dir = mkdtempSync(path.join(tmpdir(), 'tps-e2e-mosquitto-'));
  const env = {
    TPS_DATA_DIR: path.join(dir, 'relay-data'),
    TPS_MQTT_URL: url,
    TPS_ACCOUNT_USERNAME: ACCOUNT.username,
    TPS_ACCOUNT_PASSWORD: ACCOUNT.password,
    TPS_DEFAULT_SIMULATOR: 'false',
    ...(process.env.TEST_LOG ? { TPS_LOG_LEVEL: 'debug' } : {}),
  };
  let relay: RelayChild | undefined;
  let baseUrl = '';
  /** Every relay process started, for the failure messages. */
  const relays: RelayChild[] = [];
  const relayOutput = () => relays.map((r) => r.output()).join('\n--- restarted ---\n');
  const agents: TpsChild[] = [];
  /** What to remove from the shared broker afterwards: sessions and retained presence. */
  const leftovers = { clientIds: [] as string[], terminalIds: [] as string[] };

  async function startRelay(): Promise<void> {
    relay = await startRelayChild(env);
    baseUrl = relay.baseUrl;
    leftovers.clientIds.push(`tps-relay-${relay.child.pid}`);
    relays.push(relay);
  }

  async function terminalWithAgent(name: string, heartbeatS?: number) {
    const home = path.join(dir, name);
    mkdirSync(home);
    const stateFile = path.join(home, 'reader.jsonl');
    const terminal = await registerTerminal(baseUrl, ACCOUNT, { battery: true });
    leftovers.clientIds.push(`agent-${terminal.terminal_id}`);
    leftovers.terminalIds.push(terminal.terminal_id);
    // The agents are told the broker the relay uses; the credential is the terminal's own.
    expect(terminal.agent.broker_url).toBe(url);
    expect(terminal.agent.username).toBe(terminal.terminal_id);
    const configFile = writeAgentConfig(home, terminal, {
      reader: { emulated: { state_file: 'reader.jsonl', delay_ms: 1500 } },
      ...(heartbeatS !== undefined ? { heartbeat_s: heartbeatS } : {}),
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
      { ms: 20_000, what: 'the agent connected through the broker', context },
    );
    const payUntilDone = (body: Record<string, unknown>, ms = 15_000) =>
      eventually(
        () => pos('/transaction/purchase', { currency: 'EUR', wait_seconds: 2, ...body }),
        (r) => r.status === 200 && r.body.transaction.state !== 'PROCESSING',
        { ms, every: 100, what: `${String(body.external_id)} to leave PROCESSING`, context },
      );
    return { terminal, agent, pos, payUntilDone, stateFile, context };
  }

  beforeAll(async () => {
    await startRelay();
  }, 30_000);

  afterAll(async () => {
    for (const agent of agents) await agent.stop();
    await relay?.stop('SIGKILL');
    await forgetOnBroker(url, leftovers);
    rmSync(dir, { recursive: true, force: true });
  });

  it('pays end to end through the broker: purchase, pause and continue, confirm as failed reverses', async () => {
    const t = await terminalWithAgent('pays');
    const bought = await t.payUntilDone({ external_id: 'mq-purchase', requested_amount: 3100 });
    const id = bought.body.transaction.id as string;
    const record = readerRecord(t.stateFile, id);
    expect(record, t.context()).toMatchObject({ phase: 'COMPLETED', result_code: 'SUCCESS' });
    expect(bought.body.transaction).toMatchObject({
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
      total_amount: 3100,
      reference: record?.details?.reference,
    });
    const confirmed = await t.pos('/transaction/confirm', {
      external_id: 'mq-purchase',
      result_code: 'SUCCESS',
    });
    expect(confirmed.body.transaction.state).toBe('CONFIRMED');

    const paused = await t.payUntilDone({
      external_id: 'mq-pause',
      requested_amount: 1000,
      options: { on_customer_identified: { pause: true } },
    });
    expect(paused.body.transaction.state).toBe('AWAITING_CONTINUE');
    const continued = await t.pos('/transaction/continue', {
      external_id: 'mq-pause',
      requested_amount: 1400,
      wait_seconds: 10,
    });
    expect(continued.body.transaction).toMatchObject({
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
      total_amount: 1400,
    });
    const failed = await t.pos('/transaction/confirm', {
      external_id: 'mq-pause',
      result_code: 'ABORTED',
    });
    expect(failed.body.transaction.state).toBe('COMMITTED');
    const pausedId = paused.body.transaction.id as string;
    const reversed = await eventually(
      () => readerRecord(t.stateFile, pausedId),
      (r) => r?.phase === 'CANCELLED',
      { what: 'the reader to reverse', context: t.context },
    );
    expect(reversed?.result_code).toBe('REVERSED');
    for (const tx of [id, pausedId]) expect(readerRuns(t.stateFile, tx)).toHaveLength(1);
  }, 40_000);

  // While the relay is down the agent's report goes to the broker, which queues it for the
  // dead relay's session (client id tps-relay-<pid>): the restarted relay, another pid, never
  // gets it. The agent re-sends it only after a whole resend period (10 s) without any
  // report-ack, and the relay applies only seqs above the newest it applied. Heartbeats
  // every 2 s make the rest certain: their acks stop the re-send, and once one is applied
  // the payment's lower seq is acknowledged without being applied. With the default 30 s
  // heartbeat the same happens whenever a heartbeat (or any status change) comes first.
  it('the relay killed mid-payment and restarted while the broker stays up: the POS gets the reader’s result', async () => {
    const t = await terminalWithAgent('relay-restart', 2);
    const body = { external_id: 'mq-restart', requested_amount: 4200 };
    const first = await t.pos('/transaction/purchase', {
      ...body,
      currency: 'EUR',
      wait_seconds: 0,
    });
    expect(first.body.transaction.state).toBe('PROCESSING');
    const id = first.body.transaction.id as string;
    await eventually(
      () => readerRecord(t.stateFile, id),
      (r) => r?.phase === 'IN_PROGRESS',
      { what: 'the reader to start', context: t.context },
    );
    await relay!.stop('SIGKILL');
    relay = undefined;
    const record = await eventually(
      () => readerRecord(t.stateFile, id),
      (r) => r?.phase === 'COMPLETED',
      { what: 'the reader to finish while the relay is down', context: t.context },
    );
    await startRelay();
    // The agent re-sends an unacknowledged report within 10-20 s (docs/agent.md): 25 s is enough.
    const done = await t.payUntilDone(body, 25_000);
    expect(done.body.transaction).toMatchObject({
      id,
      state: 'AWAITING_CONFIRM',
      result_code: record?.result_code,
      reference: record?.details?.reference,
    });
    expect(readerRuns(t.stateFile, id)).toHaveLength(1);
    expect(readerLines(t.stateFile).every((r) => r.transaction_id === id)).toBe(true);
  }, 60_000);
});
