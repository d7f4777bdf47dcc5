/**
 * The embedded broker under a fleet's load: real aedes on a real port, the relay's link
 * into it through its in-process channel as the relay has it, agents on real MQTT
 * connections with their subscriptions and their last wills.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import mqtt, { type MqttClient } from 'mqtt';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../common/clock.js';
import { agentClientId, terminalTopics } from '../../protocol/index.js';
import { hashForBroker } from '../accounts/mosquitto-hash.js';
import { SqliteStore } from '../store/sqlite.js';
import { terminalRecord } from '../store/testing/store-fixtures.js';
import { startEmbeddedBroker } from './embedded-broker.js';
import { MqttTerminalLink } from './mqtt-link.js';

const SECRET = 'agent-secret-for-tests';
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `done` holds or `ms` pass; answers whether it holds. */
async function until(done: () => boolean, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; !done() && Date.now() < end;) await sleep(20);
  return done();
}

/** The embedded broker as the relay starts it, with the relay's link subscribed through it. */
async function relayWithTerminals(count: number) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-broker-'));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  const store = new SqliteStore(path.join(dir, 'relay.sqlite'));
  cleanups.push(() => store.close());
  const hash = hashForBroker(SECRET);
  const now = new Date().toISOString();
  await store.createAccount({ id: 'acct-1', kind: 'merchant', createdAt: now });
  const ids = Array.from({ length: count }, (_, i) => `t-${i}`);
  await Promise.all(
    ids.map(async (id) => {
      await store.createTerminal({ ...terminalRecord(id), kind: 'AGENT' });
      await store.putAgentCredential(id, hash, now);
    }),
  );
  const logger = pino({ level: 'silent' });
  const broker = await startEmbeddedBroker({
    store,
    logger,
    limits: { messagesPerMinute: 1_000_000 },
  });
  const link = new MqttTerminalLink({
    url: 'mqtt://embedded',
    channel: broker.relayChannel(),
    username: '',
    password: '',
    clientId: 'relay',
    maxPayloadBytes: 16_384,
    clock: systemClock,
    logger,
  });
  /** Terminals the relay was told went away (an agent's last will). */
  const wentAway = new Set<string>();
  link.listen({
    commandAcked: () => undefined,
    report: async (terminalId, report) => {
      if (report.type === 'status' && report.readings.connected === false) wentAway.add(terminalId);
    },
    reachable: () => undefined,
    readerReported: () => undefined,
    reconnected: () => undefined,
  });
  // Subscribed before the listener opens, as the relay does.
  await link.connect();
  const { url } = await broker.listen('127.0.0.1', 0);
  return { broker, link, url, ids, wentAway };
}

/** Agents as agent/link.ts connects them: their own session, topics and last will. */
async function connectAgents(url: string, ids: string[]): Promise<MqttClient[]> {
  const clients: MqttClient[] = [];
  for (let i = 0; i < ids.length; i += 100) {
    clients.push(
      ...(await Promise.all(
        ids.slice(i, i + 100).map(async (id) => {
          const topics = terminalTopics(id);
          const client = await mqtt.connectAsync(url, {
            username: id,
            password: SECRET,
            clientId: agentClientId(id),
            clean: false,
            protocolVersion: 4,
            reconnectPeriod: 0,
            will: {
              topic: topics.presence,
              payload: Buffer.from('{"connected":false}'),
              qos: 1,
              retain: true,
            },
          });
          client.on('error', () => undefined);
          await client.subscribeAsync({
            [topics.command]: { qos: 1 },
            [topics.reportAck]: { qos: 1 },
            [topics.update]: { qos: 1 },
          });
          await client.publishAsync(topics.presence, '{"connected":true}', {
            qos: 1,
            retain: true,
          });
          return client;
        }),
      )),
    );
  }
  return clients;
}

describe('the embedded broker', () => {
  // The relay must outlive a fleet that drops at once (a site's uplink, a carrier's outage)
  // and the SIGTERM that often follows, and must hear every terminal go away. It once died
  // there with "Maximum call stack size exceeded": aedes' own emitter has at most 100
  // messages in delivery, queues the rest, and takes the queue up by recursion, one level
  // per message whose delivery ends at once (to no subscriber left, or only to the relay's
  // channel); some 5,000 of those in a row overflow the stack. The queue fills while the
  // relay's messages to agents are being delivered (each waits a turn of the loop), as a
  // rollout's wave of update orders is; the fleet drops meanwhile, and the orders queued
  // for it, its last wills and aedes' notice of each disconnect all end at once. The
  // broker's emitter never queues (embedded-broker.ts); with aedes' own this test fails.
  it('survives a fleet dropping at once while the relay sends to it, and a SIGTERM after', async () => {
    const { broker, link, url, ids, wentAway } = await relayWithTerminals(3000);
    const agents = await connectAgents(url, ids);
    cleanups.push(() => agents.forEach((agent) => agent.end(true)));
    const errors: unknown[] = [];
    const onError = (error: unknown) => errors.push(error);
    process.on('uncaughtException', onError);
    cleanups.push(() => void process.off('uncaughtException', onError));

    // A wave of a rollout: one retained order for each agent, in one turn (cloud/rollouts/).
    for (const id of ids) link.publishUpdateOrder(id, { order_id: 'wave-1', version: '1.1.0' });
    // Dropped, not disconnected: each agent's last will goes to the relay.
    for (const agent of agents) agent.stream.destroy();
    await sleep(500);
    const heardAll = await until(() => wentAway.size === ids.length, 10_000);
    // SIGTERM: the relay closes its link, then the broker (cloud/relay.ts, close()).
    await link.close();
    await broker.close();
    // An overflow is thrown from a delivery's callback, possibly after close has answered.
    await sleep(200);

    expect(errors).toEqual([]);
    expect(heardAll, `the relay heard ${wentAway.size} of ${ids.length} last wills`).toBe(true);
  }, 60_000);
});
