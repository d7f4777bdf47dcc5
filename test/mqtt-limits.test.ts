/**
 * The embedded broker's listener has bounds, each with what happens beyond it: a packet
 * declared larger than TPS_MQTT_MAX_PACKET_BYTES ends the connection at its header, even
 * before sign-in; a peer that sends no CONNECT within TPS_MQTT_CONNECT_TIMEOUT_S is cut
 * off; connections beyond TPS_MQTT_MAX_CONNECTIONS are closed at once; an agent's message
 * larger than TPS_MQTT_MAX_PAYLOAD_BYTES, or beyond TPS_MQTT_MESSAGES_PER_MINUTE, is
 * dropped before the relay parses it (the agent sends it again later). Each is counted in
 * tps_mqtt_limited_total. Real relay, raw sockets and mqtt.js agents on its broker port.
 */
import net from 'node:net';
import mqtt, { type MqttClient } from 'mqtt';
import { afterEach, describe, expect, it } from 'vitest';
import type { CloudConfigInput } from '../cloud/config.js';
import { agentClientId, terminalTopics } from '../protocol/index.js';
import { TEST_ACCOUNT, post, startTestRelay, type TestRelay } from './support/relay.js';

let relay: TestRelay | undefined;
const sockets: net.Socket[] = [];
const clients: MqttClient[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await Promise.all(clients.splice(0).map((c) => c.endAsync(true).catch(() => undefined)));
  await relay?.close();
  relay = undefined;
});

async function start(overrides: Partial<CloudConfigInput> = {}): Promise<TestRelay> {
  relay = await startTestRelay(overrides);
  return relay;
}

function rawSocket(r: TestRelay): Promise<net.Socket> {
  const { hostname, port } = new URL(r.brokerUrl);
  const socket = net.connect({ host: hostname, port: Number(port) });
  sockets.push(socket);
  socket.on('error', () => undefined);
  return new Promise((resolve, reject) => {
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** Resolves with the ms until the socket closed, or undefined if it is open after `ms`. */
function closedWithin(socket: net.Socket, ms: number): Promise<number | undefined> {
  const started = performance.now();
  if (socket.destroyed) return Promise.resolve(0);
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), ms);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve(performance.now() - started);
    });
  });
}

async function metric(r: TestRelay, series: string): Promise<number> {
  const text = await (await fetch(r.baseUrl.replace(/\/pos$/, '/metrics'))).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line ? Number(line.split(' ')[1]) : 0;
}

const limited = (r: TestRelay, limit: string) =>
  metric(r, `tps_mqtt_limited_total{limit="${limit}"}`);

/** An agent terminal, signed in and listening to its report acknowledgements. */
async function agent(r: TestRelay) {
  const created = await post(r.baseUrl, 'v1', '/terminal/create', {}, TEST_ACCOUNT);
  expect(created.status).toBe(200);
  const { username, password } = created.body.agent as { username: string; password: string };
  const client = await mqtt.connectAsync(r.brokerUrl, {
    username,
    password,
    clientId: agentClientId(username),
    protocolVersion: 4,
    reconnectPeriod: 0,
  });
  clients.push(client);
  const topics = terminalTopics(username);
  const acks: number[] = [];
  client.on('message', (topic, payload) => {
    if (topic === topics.reportAck)
      acks.push((JSON.parse(payload.toString()) as { seq: number }).seq);
  });
  await client.subscribeAsync(topics.reportAck, { qos: 1 });
  const report = (seq: number, padding = 0) =>
    client.publishAsync(
      topics.report,
      JSON.stringify({
        journal: '0123456789abcdef',
        seq,
        report: {
          type: 'status',
          at: new Date().toISOString(),
          readings: { battery_percentage: seq },
        },
      }) + ' '.repeat(padding),
      { qos: 1 },
    );
  return { client, acks, report };
}

const settle = (ms = 500) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the embedded broker’s listener limits', () => {
  it('ends a connection that declares a packet over the limit, at its header, before sign-in', async () => {
    const r = await start();
    const socket = await rawSocket(r);
    // CONNECT with a remaining length of 268,435,455 bytes (256 MB), then a trickle.
    socket.write(Buffer.from([0x10, 0xff, 0xff, 0xff, 0x7f]));
    const trickle = setInterval(() => socket.writable && socket.write(Buffer.from([0])), 50);
    try {
      expect(await closedWithin(socket, 2000)).toBeDefined();
    } finally {
      clearInterval(trickle);
    }
    expect(await limited(r, 'packet_size')).toBe(1);
    // A packet within the limit (the default, 64 KiB) still passes: an agent signs in.
    await agent(r);
  });

  it('cuts off a peer that sends no CONNECT within TPS_MQTT_CONNECT_TIMEOUT_S', async () => {
    const r = await start({ mqttConnectTimeoutS: 1 });
    const socket = await rawSocket(r);
    const ms = await closedWithin(socket, 4000);
    expect(ms).toBeDefined();
    expect(ms!).toBeGreaterThan(700);
    expect(await limited(r, 'connect_timeout')).toBe(1);
    // Counted with the other attempts, where an operator sees a reconnect storm.
    await agent(r);
    expect(await metric(r, 'tps_mqtt_connects_total{outcome="timed_out"}')).toBe(1);
    expect(await metric(r, 'tps_mqtt_connects_total{outcome="accepted"}')).toBe(1);
    expect(await metric(r, 'tps_mqtt_agents_connected')).toBe(1);
  });

  it('closes connections beyond TPS_MQTT_MAX_CONNECTIONS at once', async () => {
    const r = await start({ mqttMaxConnections: 3 });
    const held = await Promise.all([rawSocket(r), rawSocket(r), rawSocket(r)]);
    const extra = await rawSocket(r);
    expect(await closedWithin(extra, 1000)).toBeDefined();
    for (const socket of held) expect(socket.destroyed).toBe(false);
    expect(await limited(r, 'connections')).toBe(1);
  });

  it('drops an agent’s message over TPS_MQTT_MAX_PAYLOAD_BYTES before the relay parses it', async () => {
    const r = await start();
    const a = await agent(r);
    // Valid JSON, a status report the relay would apply, padded to 20 KB.
    await a.report(1, 20_000);
    await settle(800);
    expect(a.acks).toEqual([]);
    expect(await limited(r, 'payload_size')).toBe(1);
    await a.report(2);
    await settle();
    expect(a.acks).toEqual([2]);
  });

  it('drops an agent’s messages beyond TPS_MQTT_MESSAGES_PER_MINUTE', async () => {
    const r = await start({ mqttMessagesPerMinute: 5 });
    const a = await agent(r);
    for (let seq = 1; seq <= 8; seq++) await a.report(seq);
    await settle(800);
    expect(a.acks).toEqual([1, 2, 3, 4, 5]);
    expect(await limited(r, 'message_rate')).toBe(3);
  });
});
