/**
 * The embedded broker under a fleet's load: real aedes on a real port, the relay's channel
 * in process as the relay has it, agents on raw MQTT connections with their last wills.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import mqtt, { type MqttClient } from 'mqtt';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { agentClientId, RELAY_SUBSCRIPTIONS, terminalTopics } from '../../protocol/index.js';
import { hashForBroker } from '../accounts/mosquitto-hash.js';
import { SqliteStore } from '../store/sqlite.js';
import { terminalRecord } from '../store/testing/store-fixtures.js';
import { startEmbeddedBroker } from './embedded-broker.js';

const SECRET = 'agent-secret-for-tests';
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function brokerWithTerminals(count: number) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-broker-'));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  const store = new SqliteStore(path.join(dir, 'relay.sqlite'));
  cleanups.push(() => store.close());
  const hash = hashForBroker(SECRET);
  await store.ensureAccount('acct-1', new Date().toISOString());
  const ids = Array.from({ length: count }, (_, i) => `t-${i}`);
  for (const id of ids) {
    await store.createTerminal({ ...terminalRecord(id), kind: 'AGENT' });
    await store.putAgentCredential(id, hash, new Date().toISOString());
  }
  const broker = await startEmbeddedBroker({
    store,
    logger: pino({ level: 'silent' }),
    limits: { messagesPerMinute: 1_000_000 },
  });
  // The relay's own channel, subscribed as the relay's link is.
  const relay = broker.relayChannel();
  await relay.subscribe(Object.values(RELAY_SUBSCRIPTIONS), () => undefined);
  const { url } = await broker.listen('127.0.0.1', 0);
  return { broker, relay, url, ids };
}

async function connectAgents(url: string, ids: string[]): Promise<MqttClient[]> {
  const clients: MqttClient[] = [];
  for (let i = 0; i < ids.length; i += 100) {
    clients.push(
      ...(await Promise.all(
        ids.slice(i, i + 100).map(async (id) => {
          const presence = terminalTopics(id).presence;
          const client = await mqtt.connectAsync(url, {
            username: id,
            password: SECRET,
            clientId: agentClientId(id),
            clean: false,
            protocolVersion: 4,
            reconnectPeriod: 0,
            will: {
              topic: presence,
              payload: Buffer.from('{"connected":false}'),
              qos: 1,
              retain: true,
            },
          });
          await client.publishAsync(presence, '{"connected":true}', { qos: 1, retain: true });
          return client;
        }),
      )),
    );
  }
  return clients;
}

describe('the embedded broker', () => {
  // With aedes' own emitter (100 at once, the rest queued, drained by recursion) and the
  // relay's MQTT client in process, 3,000 wills at once overflowed the stack every time.
  // Both are gone: the emitter never queues, and the relay hears the broker through its
  // channel, which answers each delivery at once. This holds the scenario.
  it('closes without a stack overflow when every agent drops at once just before', async () => {
    const { broker, url, ids } = await brokerWithTerminals(3000);
    const agents = await connectAgents(url, ids);
    const errors: unknown[] = [];
    const onError = (error: unknown) => errors.push(error);
    process.on('uncaughtException', onError);
    cleanups.push(() => void process.off('uncaughtException', onError));
    // Dropped, not disconnected: each agent's last will goes to the relay.
    for (const agent of agents) agent.stream.destroy();
    await new Promise((resolve) => setTimeout(resolve, 50));
    await broker.close();
    // The overflow is thrown from a delivery's callback, after close has answered.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(errors).toEqual([]);
  }, 120_000);
});
