/**
 * The relay's side of the MQTT link, against its embedded broker on a real port, with a
 * test-side agent speaking protocol/mqtt.ts: commands until acknowledged, reports applied
 * once, presence and the last will, and each agent held to its own topics.
 */
import mqtt, { type MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { terminalTopics, type CommandMessage } from '../protocol/index.js';
import { post, startTestRelay, type TestRelay } from './support/relay.js';

let relay: TestRelay;
beforeAll(async () => {
  relay = await startTestRelay();
});
afterAll(async () => {
  await relay.close();
});

interface Registered {
  terminal_id: string;
  username: string;
  password: string;
  agent: { broker_url: string; username: string; password: string };
}

async function register(): Promise<Registered> {
  const res = await post(relay.baseUrl, 'v1', '/terminal/create', { printer: true }, relay.account);
  expect(res.status).toBe(200);
  return res.body;
}

function connectAgent(agent: Registered['agent'], will = true): Promise<MqttClient> {
  const topics = terminalTopics(agent.username);
  const client = mqtt.connect(agent.broker_url, {
    username: agent.username,
    password: agent.password,
    clientId: `agent-${agent.username}`,
    reconnectPeriod: 0,
    ...(will
      ? {
          will: {
            topic: topics.presence,
            payload: Buffer.from('{"connected":false}'),
            qos: 1,
            retain: true,
          },
        }
      : {}),
  });
  return new Promise((resolve, reject) => {
    client.once('connect', () => resolve(client));
    client.once('error', reject);
  });
}

/** An agent signed in and subscribed to its commands and report-acks, which it collects. */
async function listeningAgent(t: Registered) {
  const agent = await connectAgent(t.agent);
  const topics = terminalTopics(t.terminal_id);
  const commands: CommandMessage[] = [];
  const reportAcks: number[] = [];
  agent.on('message', (topic, payload) => {
    if (topic === topics.command) commands.push(JSON.parse(payload.toString()));
    if (topic === topics.reportAck) reportAcks.push(JSON.parse(payload.toString()).seq);
  });
  await agent.subscribeAsync([topics.command, topics.reportAck], { qos: 1 });
  return { agent, topics, commands, reportAcks };
}

const pos = (t: Registered) => ({
  call: (op: string, body: object) =>
    post(relay.baseUrl, 'v1', op, { terminal_id: t.terminal_id, ...body }, t),
});

async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, ms = 5000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('relay ⇄ agent over MQTT', () => {
  it('registers a terminal with a POS credential and an agent credential', async () => {
    const t = await register();
    expect(t.terminal_id).toMatch(/^t-\d{10}$/);
    expect(t.agent).toMatchObject({ broker_url: relay.brokerUrl, username: t.terminal_id });
    const status = await pos(t).call('/terminal/status', {});
    expect(status.body.status).toMatchObject({ terminal_id: t.terminal_id, connected: false });
    const byTerminal = await post(relay.baseUrl, 'v1', '/terminal/create', {}, t);
    expect(byTerminal.body.error.code).toBe('FORBIDDEN');
  });

  it('runs a purchase: command until acknowledged, reports applied once and acknowledged', async () => {
    const t = await register();
    const { agent, topics, commands, reportAcks } = await listeningAgent(t);
    await agent.publishAsync(topics.presence, JSON.stringify({ connected: true }), {
      qos: 1,
      retain: true,
    });
    const connected = await until(
      () => pos(t).call('/terminal/status', {}),
      (r) => r.body.status.connected === true,
    );
    expect(connected.body.status.connected).toBe(true);

    const created = await pos(t).call('/transaction/purchase', {
      external_id: 'mq-1',
      requested_amount: 1500,
      currency: 'EUR',
      wait_seconds: 0,
    });
    expect(created.body.transaction.state).toBe('PROCESSING');
    await until(
      async () => commands.length,
      (n) => n > 0,
    );
    const start = commands[0]!.command;
    expect(start).toMatchObject({
      type: 'transaction.start',
      requested_amount: 1500,
      kind: 'PURCHASE',
    });
    expect(start.type === 'transaction.start' && start.expires_at).toBeTruthy();

    await agent.publishAsync(
      topics.commandAck,
      JSON.stringify({ command_id: start.command_id, outcome: 'ACCEPTED' }),
      { qos: 1 },
    );
    const report = {
      journal: '0123456789abcdef',
      seq: 1,
      report: {
        type: 'transaction',
        transaction_id: created.body.transaction.id,
        phase: 'COMPLETED',
        result_code: 'SUCCESS',
        details: { authorized_amount: 1500, total_amount: 1500 },
      },
    };
    // Sent twice, as after a reconnect: applied once, acknowledged both times.
    await agent.publishAsync(topics.report, JSON.stringify(report), { qos: 1 });
    await agent.publishAsync(topics.report, JSON.stringify(report), { qos: 1 });
    const done = await pos(t).call('/transaction/get', { external_id: 'mq-1', wait_seconds: 5 });
    expect(done.body.transaction).toMatchObject({
      state: 'AWAITING_CONFIRM',
      result_code: 'SUCCESS',
      total_amount: 1500,
    });
    await until(
      async () => reportAcks.length,
      (n) => n >= 2,
    );
    expect(reportAcks).toEqual([1, 1]);

    const events = await post(
      relay.baseUrl,
      'v1',
      '/event/list',
      {
        filter: {
          subject: { eq: t.terminal_id },
          type: { eq: 'eu.vendor.api.pos.v0.Transaction' },
        },
      },
      t,
    );
    expect(events.body.events.map((e: { data: { state: string } }) => e.data.state)).toEqual([
      'PROCESSING',
      'AWAITING_CONFIRM',
    ]);

    // A cancel after the failure confirm, sent until acknowledged.
    await pos(t).call('/transaction/confirm', { external_id: 'mq-1', result_code: 'ABORTED' });
    await until(
      async () => commands.filter((c) => c.command.type === 'transaction.cancel').length,
      (n) => n >= 1,
    );
    expect(commands.at(-1)!.command).toMatchObject({
      type: 'transaction.cancel',
      transaction_id: created.body.transaction.id,
    });
    await agent.endAsync();
  });

  it('applies a report that overtook its predecessor after it, without holding up the terminal', async () => {
    const t = await register();
    const { agent, topics, reportAcks } = await listeningAgent(t);
    const created = await pos(t).call('/transaction/purchase', {
      external_id: 'order-1',
      requested_amount: 900,
      currency: 'EUR',
      options: { on_customer_identified: { pause: true } },
      wait_seconds: 0,
    });
    const transactionId = created.body.transaction.id as string;
    const journal = 'fedcba9876543210';
    const paused = {
      journal,
      seq: 1,
      report: { type: 'transaction', transaction_id: transactionId, phase: 'CUSTOMER_IDENTIFIED' },
    };
    const status = {
      journal,
      seq: 2,
      prev: 1,
      report: {
        type: 'status',
        at: new Date().toISOString(),
        readings: { battery_percentage: 42 },
      },
    };
    // The later one first (as a client re-sends what was in flight at a reconnect first):
    // held, not applied, not acknowledged; applied once its predecessor is.
    await agent.publishAsync(topics.report, JSON.stringify(status), { qos: 1 });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(reportAcks).toEqual([]);
    const meanwhile = await pos(t).call('/terminal/status', {});
    expect(meanwhile.body.status.battery_percentage).toBeUndefined();
    await agent.publishAsync(topics.report, JSON.stringify(paused), { qos: 1 });
    await until(
      async () => reportAcks.length,
      (n) => n >= 2,
    );
    expect(reportAcks).toEqual([1, 2]);
    const got = await pos(t).call('/transaction/get', { external_id: 'order-1' });
    expect(got.body.transaction.state).toBe('AWAITING_CONTINUE');
    const after = await pos(t).call('/terminal/status', {});
    expect(after.body.status.battery_percentage).toBe(42);
    await agent.endAsync();
  });

  it("marks the terminal disconnected by the agent's last will", async () => {
    const t = await register();
    const agent = await connectAgent(t.agent);
    await agent.publishAsync(
      terminalTopics(t.terminal_id).presence,
      JSON.stringify({ connected: true }),
      { qos: 1, retain: true },
    );
    await until(
      () => pos(t).call('/terminal/status', {}),
      (r) => r.body.status.connected === true,
    );
    agent.stream.destroy();
    const gone = await until(
      () => pos(t).call('/terminal/status', {}),
      (r) => r.body.status.connected === false,
    );
    expect(gone.body.status.connected).toBe(false);
    agent.end(true);
  });

  it('holds an agent to its own topics, and refuses a wrong credential', async () => {
    const mine = await register();
    const theirs = await register();
    const agent = await connectAgent(mine.agent, false);
    for (const forbidden of [
      terminalTopics(theirs.terminal_id).command,
      'tps/v1/t/+/cmd',
      '#',
      terminalTopics(mine.terminal_id).report,
    ]) {
      await expect(agent.subscribeAsync(forbidden, { qos: 1 }), forbidden).rejects.toThrow(
        /Subscribe error/,
      );
    }
    const granted = await agent.subscribeAsync(terminalTopics(mine.terminal_id).command, {
      qos: 1,
    });
    expect(granted.map((g) => g.qos)).toEqual([1]);

    // A report forged for another terminal is refused by the broker and never applied.
    const created = await pos(theirs).call('/transaction/purchase', {
      external_id: 'x',
      requested_amount: 1,
      currency: 'EUR',
      wait_seconds: 0,
    });
    agent.publish(
      terminalTopics(theirs.terminal_id).report,
      JSON.stringify({
        journal: '0123456789abcdef',
        seq: 1,
        report: {
          type: 'transaction',
          transaction_id: created.body.transaction.id,
          phase: 'COMPLETED',
          result_code: 'SUCCESS',
        },
      }),
      { qos: 1 },
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    const still = await pos(theirs).call('/transaction/get', { external_id: 'x', wait_seconds: 0 });
    expect(still.body.transaction.state).toBe('PROCESSING');
    agent.end(true);

    await expect(connectAgent({ ...mine.agent, password: 'wrong' })).rejects.toThrow(
      /Bad username or password|Not authorized/i,
    );
    await expect(connectAgent({ ...mine.agent, username: theirs.terminal_id })).rejects.toThrow(
      /Bad username or password/,
    );
    await pos(theirs).call('/transaction/confirm', { external_id: 'x', result_code: 'ABORTED' });
  });
});
