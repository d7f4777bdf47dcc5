/**
 * The relay's side of the fleet topics over its embedded broker, with MQTT clients in the
 * agents' place: a configuration reaches its terminal's agent (retained, so also one
 * that connects later) and no other; an agent cannot read another terminal's
 * configuration or diagnostics, nor report for it; a diagnostic request is answered by
 * its correlation id, refused at once for a terminal that is not connected, and ends as
 * 504 when the agent keeps quiet.
 */
import mqtt, { type MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ConfigMessage,
  DiagnosticRequestMessage,
  terminalTopics,
  type ConfigReportMessage,
  type DiagnosticReplyMessage,
} from '../protocol/index.js';
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
  agent: { broker_url: string; username: string; password: string };
}

async function register(): Promise<Registered> {
  const res = await post(relay.baseUrl, 'v1', '/terminal/create', {}, relay.account);
  expect(res.status).toBe(200);
  return res.body;
}

async function connectAgent(t: Registered): Promise<MqttClient> {
  const client = mqtt.connect(t.agent.broker_url, {
    username: t.agent.username,
    password: t.agent.password,
    clientId: `agent-${t.terminal_id}`,
    reconnectPeriod: 0,
  });
  await new Promise((resolve, reject) => {
    client.once('connect', resolve);
    client.once('error', reject);
  });
  return client;
}

/** Says `connected` as an agent does, so the relay counts the terminal online. */
async function online(client: MqttClient, terminalId: string) {
  await client.publishAsync(terminalTopics(terminalId).presence, '{"connected":true}', {
    qos: 1,
    retain: true,
  });
}

const account = (op: string, body: object) => post(relay.baseUrl, 'v1', op, body, relay.account);

async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, ms = 5000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function nextMessage(client: MqttClient, topic: string): Promise<unknown> {
  return new Promise((resolve) => {
    const onMessage = (t: string, payload: Buffer) => {
      if (t !== topic) return;
      client.off('message', onMessage);
      resolve(JSON.parse(payload.toString()));
    };
    client.on('message', onMessage);
  });
}

describe('fleet topics over the embedded broker', () => {
  it("pushes a terminal's configuration to its agent alone, retained, and keeps its report", async () => {
    const a = await register();
    const b = await register();
    const set = await account('/fleet/config/set', {
      scope: { terminal_id: a.terminal_id },
      config: { heartbeat_s: 12, idle_screen_text: 'Welcome' },
    });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    const desired = set.body.terminals[0].desired;
    expect(desired.config).toEqual({ heartbeat_s: 12, idle_screen_text: 'Welcome' });
    expect(set.body.terminals[0]).toMatchObject({ reported: null, in_sync: false });

    // Connected after the push: the retained message is there for it at subscribe.
    const agentA = await connectAgent(a);
    const received = nextMessage(agentA, terminalTopics(a.terminal_id).config);
    await agentA.subscribeAsync(terminalTopics(a.terminal_id).config, { qos: 1 });
    expect(ConfigMessage.parse(await received)).toEqual(desired);

    // B's configuration, diagnostics and reports are out of A's reach.
    const theirs = terminalTopics(b.terminal_id);
    for (const forbidden of [theirs.config, theirs.diagnostic, 'tps/v1/t/+/config']) {
      await expect(agentA.subscribeAsync(forbidden, { qos: 1 }), forbidden).rejects.toThrow(
        /Subscribe error/,
      );
    }
    const report: ConfigReportMessage = {
      version: desired.version,
      status: 'APPLIED',
      applied_version: desired.version,
      at: new Date().toISOString(),
    };
    agentA.publish(theirs.configReport, JSON.stringify(report), { qos: 1 });
    const agentA2 = await connectAgent(a);
    await agentA2.publishAsync(terminalTopics(a.terminal_id).configReport, JSON.stringify(report), {
      qos: 1,
      retain: true,
    });
    const own = await until(
      () => account('/fleet/config/get', { scope: { terminal_id: a.terminal_id } }),
      (r) => r.body.terminals[0].in_sync === true,
    );
    expect(own.body.terminals[0]).toMatchObject({ reported: { status: 'APPLIED' }, in_sync: true });
    const other = await account('/fleet/config/get', { scope: { terminal_id: b.terminal_id } });
    expect(other.body.terminals[0].reported).toBeNull();
    agentA.end(true);
    agentA2.end(true);
  });

  it('answers a diagnostic request by its correlation id; offline and silent agents get a clear error', async () => {
    const t = await register();
    const ask = (body: object = {}) =>
      account('/fleet/diagnostics', { terminal_id: t.terminal_id, kind: 'logs', ...body });

    const offline = await ask();
    expect(offline.status).toBe(409);
    expect(offline.body.error.code).toBe('TERMINAL_OFFLINE');

    const agent = await connectAgent(t);
    const topics = terminalTopics(t.terminal_id);
    await agent.subscribeAsync(topics.diagnostic, { qos: 1 });
    await online(agent, t.terminal_id);
    await until(
      () => account('/terminal/status', { terminal_id: t.terminal_id }),
      (r) => r.body.status?.connected === true,
    );
    agent.on('message', (topic, payload) => {
      if (topic !== topics.diagnostic) return;
      const request = DiagnosticRequestMessage.parse(JSON.parse(payload.toString()));
      // First an answer to some other request: it must not end this one.
      const stray: DiagnosticReplyMessage = {
        request_id: 'f'.repeat(24),
        kind: 'logs',
        logs: { lines: ['not this one'], truncated: false },
      };
      agent.publish(topics.diagnosticReply, JSON.stringify(stray), { qos: 1 });
      const reply: DiagnosticReplyMessage = {
        request_id: request.request_id,
        kind: request.kind,
        logs: { lines: [`line for ${request.lines}`], truncated: false },
      };
      agent.publish(topics.diagnosticReply, JSON.stringify(reply), { qos: 1 });
    });
    const answered = await ask({ lines: 3 });
    expect(answered.status, JSON.stringify(answered.body)).toBe(200);
    expect(answered.body).toEqual({
      terminal_id: t.terminal_id,
      kind: 'logs',
      logs: { lines: ['line for 3'], truncated: false },
    });

    agent.removeAllListeners('message');
    const silent = await ask({ wait_seconds: 1 });
    expect(silent.status).toBe(504);
    expect(silent.body.error.code).toBe('TERMINAL_NO_ANSWER');
    agent.end(true);
  });

  it('refuses configuration and diagnostics to a terminal credential, and a malformed layer', async () => {
    const t = await register();
    const sim = await relay.newSimulator();
    const asTerminal = await post(
      relay.baseUrl,
      'v1',
      '/fleet/config/get',
      { scope: { terminal_id: sim.terminal_id } },
      sim,
    );
    expect(asTerminal.status).toBe(403);
    const typo = await account('/fleet/config/set', {
      scope: { terminal_id: t.terminal_id },
      config: { heartbeat: 10 },
    });
    expect(typo.status).toBe(400);
    expect(typo.body.error.code).toBe('INVALID_REQUEST');
    const unknown = await account('/fleet/config/get', { scope: { terminal_id: 't-1999999999' } });
    expect(unknown.body.error?.code).toBe('TERMINAL_NOT_FOUND');
  });
});
