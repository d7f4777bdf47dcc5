/**
 * An agent's credential is bound to its own client id at the embedded broker: terminal
 * A's credential under client id `agent-<B>` would take B's session (MQTT hands a client
 * id's session to whoever connects with it): disconnect B, fire its last will, receive
 * the commands queued for it and, with a clean session, wipe its subscriptions. Real
 * relay, real broker port, real mqtt.js clients.
 */
import mqtt, { type MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { terminalTopics } from '../protocol/index.js';
import { eventually } from './support/e2e-parts.js';
import { TEST_ACCOUNT, post, startTestRelay, type TestRelay } from './support/relay.js';

interface Registered {
  terminal_id: string;
  username: string;
  password: string;
  agent: { broker_url: string; username: string; password: string };
}

let relay: TestRelay;
const clients: MqttClient[] = [];
beforeAll(async () => {
  relay = await startTestRelay();
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.endAsync(true).catch(() => undefined)));
  await relay.close();
});

async function register(): Promise<Registered> {
  const res = await post(relay.baseUrl, 'v1', '/terminal/create', {}, TEST_ACCOUNT);
  expect(res.status).toBe(200);
  return res.body;
}

/** Connects as an agent does, with its last will on its presence topic. */
function connect(
  credential: Registered['agent'],
  clientId: string,
  clean: boolean,
): Promise<{ client: MqttClient; error?: Error & { code?: number } }> {
  const client = mqtt.connect(credential.broker_url, {
    username: credential.username,
    password: credential.password,
    clientId,
    clean,
    protocolVersion: 4,
    reconnectPeriod: 0,
    connectTimeout: 5000,
    will: {
      topic: terminalTopics(credential.username).presence,
      payload: Buffer.from('{"connected":false}'),
      qos: 1,
      retain: true,
    },
  });
  clients.push(client);
  return new Promise((resolve) => {
    client.once('connect', () => resolve({ client }));
    client.once('error', (error) => resolve({ client, error }));
  });
}

describe('client ids at the embedded broker', () => {
  it('refuses terminal A’s credential under B’s client id; B keeps its connection, session and commands', async () => {
    const a = await register();
    const b = await register();
    const victim = await connect(b.agent, `agent-${b.terminal_id}`, false);
    expect(victim.error).toBeUndefined();
    const victimHeard: string[] = [];
    victim.client.on('message', (_topic, payload) => victimHeard.push(payload.toString()));
    await victim.client.subscribeAsync(terminalTopics(b.terminal_id).command, { qos: 1 });
    let victimClosed = false;
    victim.client.on('close', () => (victimClosed = true));
    await victim.client.publishAsync(
      terminalTopics(b.terminal_id).presence,
      JSON.stringify({ connected: true }),
      { qos: 1, retain: true },
    );
    const connected = () =>
      post(relay.baseUrl, 'v1', '/terminal/status', { terminal_id: b.terminal_id }, b).then(
        (res) => res.body.status.connected as boolean,
      );
    await eventually(connected, (c) => c, { what: 'B to be connected' });

    for (const clean of [false, true]) {
      const intruder = await connect(a.agent, `agent-${b.terminal_id}`, clean);
      expect(intruder.error?.code, `clean ${clean}`).toBe(2);
      expect(intruder.client.connected).toBe(false);
    }
    expect(victimClosed).toBe(false);

    // B's last will did not fire: it is still connected for the relay.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(await connected()).toBe(true);
    // The relay's own link still reaches B: a purchase on B's terminal sends it a start.
    const purchase = await post(
      relay.baseUrl,
      'v1',
      '/transaction/purchase',
      {
        terminal_id: b.terminal_id,
        external_id: 'cid-1',
        requested_amount: 100,
        currency: 'EUR',
        wait_seconds: 0,
      },
      b,
    );
    expect(purchase.status).toBe(200);
    await eventually(
      () => victimHeard,
      (heard) => heard.some((m) => m.includes('transaction.start')),
      { what: 'B to receive its start command' },
    );
  });

  it('lets an agent use its own client id and the doctor’s `doctor-<own id>-<pid>`, not another terminal’s', async () => {
    const a = await register();
    const b = await register();
    const own = await connect(a.agent, `agent-${a.terminal_id}`, false);
    expect(own.error).toBeUndefined();
    const doctor = await connect(a.agent, `doctor-${a.terminal_id}-4242`, true);
    expect(doctor.error).toBeUndefined();
    for (const clientId of [
      `doctor-${b.terminal_id}-4242`,
      `agent-${b.terminal_id}`,
      'tps-relay-0123456789ab',
      `agent-${a.terminal_id}-x`,
      '',
    ]) {
      const refused = await connect(a.agent, clientId, true);
      expect(refused.error?.code, clientId).toBe(2);
    }
    expect(own.client.connected).toBe(true);
    expect(await (await fetch(relay.baseUrl.replace(/\/pos$/, '/metrics'))).text()).toMatch(
      /tps_sign_in_failures_total\{listener="mqtt",outcome="client_id"\} [1-9]/,
    );
  });
});
