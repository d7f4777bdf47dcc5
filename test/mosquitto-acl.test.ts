/**
 * A real Mosquitto run on the files `tps broker mosquitto` writes from a relay's store:
 * agents sign in with the credential the relay issued (its stored `$7$` hash, as is),
 * and reach only their own terminal's topics in their own direction; the relay user
 * reaches all, also through a `$share/` subscription. Mosquitto drops a refused publish
 * without telling the publisher, so what did not pass is asserted on a subscriber that
 * would have heard it. Runs the machine's `mosquitto` binary on a free port of its own;
 * skipped, saying so, where there is none.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import mqtt, { type MqttClient } from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashGeneratedSecret } from '../cloud/accounts/secrets.js';
import { systemClock } from '../common/clock.js';
import { SqliteStore } from '../cloud/store/sqlite.js';
import { TerminalRegistry } from '../cloud/terminals/registry.js';
import { agentClientId, terminalTopics } from '../protocol/index.js';
import { eventually, runTpsToEnd } from './support/e2e-parts.js';
import {
  MOSQUITTO_BINARY,
  startPasswordMosquitto,
  type PasswordMosquitto,
} from './support/password-mosquitto.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const RELAY = { username: 'tps-relay', password: 'relay-broker-password-for-the-test' };
const ACCOUNT_ID = 'acct-mosquitto-test';

interface Agent {
  id: string;
  secret: string;
}

describe.skipIf(!MOSQUITTO_BINARY)(
  `Mosquitto on the files of 'tps broker mosquitto'${MOSQUITTO_BINARY ? '' : ' (SKIPPED: no mosquitto binary on this machine; apt-get install mosquitto)'}`,
  () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-mosquitto-acl-'));
    const dataDir = path.join(dir, 'data');
    const brokerDir = path.join(dir, 'broker');
    let broker: PasswordMosquitto | undefined;
    const clients: MqttClient[] = [];
    let a: Agent;
    let b: Agent;
    let older: Agent;

    /** Registers agent terminals as `/terminal/create` does, straight on the store. */
    async function withStore<T>(
      run: (registry: TerminalRegistry, store: SqliteStore) => Promise<T>,
    ) {
      const store = new SqliteStore(path.join(dataDir, 'relay.sqlite'));
      try {
        await store.createAccount({
          id: ACCOUNT_ID,
          kind: 'merchant',
          createdAt: new Date().toISOString(),
        });
        return await run(new TerminalRegistry(store, systemClock), store);
      } finally {
        await store.close();
      }
    }
    const newAgent = (registry: TerminalRegistry) =>
      registry
        .createAgentTerminal(ACCOUNT_ID, { printer: false, battery: false })
        .then((t): Agent => ({ id: t.terminal.id, secret: t.agentSecret }));

    const writeBrokerFiles = () =>
      runTpsToEnd(['broker', 'mosquitto', '--out', brokerDir, '--data-dir', dataDir], {
        TPS_MQTT_USERNAME: RELAY.username,
        TPS_MQTT_PASSWORD: RELAY.password,
      });

    /** Connects to the agents' listener, or the relay user to the relays'. */
    function connect(
      username: string,
      password: string,
      options: { clientId?: string; clean?: boolean; will?: boolean } = {},
    ): Promise<MqttClient> {
      const client = mqtt.connect(username === RELAY.username ? broker!.relayUrl : broker!.url, {
        username,
        password,
        protocolVersion: 4,
        clean: options.clean ?? true,
        reconnectPeriod: 0,
        connectTimeout: 5000,
        ...(options.clientId !== undefined ? { clientId: options.clientId } : {}),
        ...(options.will
          ? {
              will: {
                topic: terminalTopics(username).presence,
                payload: Buffer.from('{"connected":false}'),
                qos: 1 as const,
                retain: true,
              },
            }
          : {}),
      });
      clients.push(client);
      return new Promise((resolve, reject) => {
        client.once('connect', () => resolve(client));
        client.once('error', reject);
        client.once('close', () => reject(new Error('connection closed before CONNACK')));
      });
    }

    /** Every message a client receives, in order. */
    function heard(client: MqttClient): Array<{ topic: string; payload: string }> {
      const messages: Array<{ topic: string; payload: string }> = [];
      client.on('message', (topic, payload) =>
        messages.push({ topic, payload: payload.toString() }),
      );
      return messages;
    }

    const context = () => `--- mosquitto ---\n${broker?.output()}`;

    beforeAll(async () => {
      ({ a, b, older } = await withStore(async (registry, store) => {
        const a = await newAgent(registry);
        const b = await newAgent(registry);
        // An agent credential stored before the $7$ format (salted SHA-256).
        const older = await newAgent(registry);
        await store.putAgentCredential(
          older.id,
          hashGeneratedSecret(older.secret),
          new Date().toISOString(),
        );
        return { a, b, older };
      }));
      const result = await writeBrokerFiles();
      if (result.code !== 0) throw new Error(`tps broker mosquitto failed:\n${result.stderr}`);
      broker = await startPasswordMosquitto(dir, brokerDir);
    }, 30_000);

    afterAll(async () => {
      await Promise.all(clients.map((c) => c.endAsync(true).catch(() => undefined)));
      await broker?.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    });

    it('writes passwd (the stored hashes, as is) and acl, mode 0600, and says how to use and reload them', async () => {
      const passwd = fs.readFileSync(path.join(brokerDir, 'passwd'), 'utf8');
      const lines = passwd.trim().split('\n');
      expect(lines.map((l) => l.split(':')[0]).sort()).toEqual([RELAY.username, a.id, b.id].sort());
      const stored = await withStore(async (_, store) => store.findAgentCredential(a.id));
      expect(lines).toContain(`${a.id}:${stored}`);
      expect(passwd).not.toContain(older.id);
      for (const file of ['passwd', 'acl']) {
        expect(fs.statSync(path.join(brokerDir, file)).mode & 0o777).toBe(0o600);
      }
      expect(fs.readdirSync(brokerDir).sort()).toEqual(['acl', 'passwd']);

      const again = await writeBrokerFiles();
      expect(again.code).toBe(0);
      for (const line of [
        `password_file ${path.join(brokerDir, 'passwd')}`,
        `acl_file ${path.join(brokerDir, 'acl')}`,
        'allow_anonymous false',
        'set_tcp_nodelay true',
        'kill -HUP',
      ]) {
        expect(again.stdout).toContain(line);
      }
      // The agent whose hash Mosquitto cannot read is named, with what to do about it.
      expect(again.stderr).toContain(older.id);
      expect(again.stderr).toMatch(/No command issues a new agent secret/);
    });

    it('an agent signs in with its own credential; a wrong secret, another terminal’s secret and a pre-$7$ credential are refused', async () => {
      await expect(connect(a.id, a.secret)).resolves.toBeDefined();
      for (const [username, password] of [
        [a.id, `${a.secret}x`],
        [a.id, b.secret],
        [older.id, older.secret],
        [RELAY.username, 'not-the-relay-password'],
      ] as const) {
        await expect(connect(username, password), `${username} must be refused`).rejects.toThrow(
          /Not authorized|Bad username or password/i,
        );
      }
    });

    it('an agent publishes its reports and reads its commands; the relay hears it through $share/', async () => {
      const relay = await connect(RELAY.username, RELAY.password);
      const relayHeard = heard(relay);
      const granted = await relay.subscribeAsync(`$share/relays/tps/v1/t/+/report`, { qos: 1 });
      expect(granted.map((g) => g.qos)).toEqual([1]);

      const agent = await connect(a.id, a.secret);
      const agentHeard = heard(agent);
      const own = terminalTopics(a.id);
      const subscribed = await agent.subscribeAsync([own.command, own.reportAck], { qos: 1 });
      expect(subscribed.map((g) => g.qos)).toEqual([1, 1]);

      await agent.publishAsync(own.report, 'report-1', { qos: 1 });
      await eventually(
        () => relayHeard,
        (m) => m.some((x) => x.payload === 'report-1'),
        { what: 'the relay to hear the report', context },
      );
      expect(relayHeard).toEqual([{ topic: own.report, payload: 'report-1' }]);

      await relay.publishAsync(own.command, 'command-1', { qos: 1 });
      await relay.publishAsync(own.reportAck, 'ack-1', { qos: 1 });
      await eventually(
        () => agentHeard,
        (m) => m.length === 2,
        { what: 'the agent to get its command and report-ack', context },
      );
      expect(agentHeard).toEqual([
        { topic: own.command, payload: 'command-1' },
        { topic: own.reportAck, payload: 'ack-1' },
      ]);
    });

    it('an agent never receives another terminal’s commands, whatever it subscribes to', async () => {
      const relay = await connect(RELAY.username, RELAY.password);
      const victim = await connect(b.id, b.secret);
      const victimHeard = heard(victim);
      await victim.subscribeAsync(terminalTopics(b.id).command, { qos: 1 });

      const spy = await connect(a.id, a.secret);
      const spyHeard = heard(spy);
      // Mosquitto 2.0 grants these subscriptions and filters every message on delivery.
      await spy.subscribeAsync(
        [
          terminalTopics(b.id).command,
          terminalTopics(b.id).config,
          terminalTopics(b.id).diagnostic,
          terminalTopics(b.id).localCert,
          'tps/v1/t/+/cmd',
          'tps/v1/t/+/config',
          'tps/v1/#',
          '#',
          `$share/spies/${terminalTopics(b.id).command}`,
          terminalTopics(a.id).command,
        ],
        { qos: 1 },
      );

      // Another terminal's configuration (retained) and diagnostic requests stay its own.
      await relay.publishAsync(terminalTopics(b.id).config, 'b-config', { qos: 1, retain: true });
      await relay.publishAsync(terminalTopics(b.id).diagnostic, 'b-diag', { qos: 1 });
      await relay.publishAsync(terminalTopics(b.id).localCert, 'b-cert', { qos: 1 });
      await relay.publishAsync(terminalTopics(b.id).command, 'secret-command', { qos: 1 });
      // Published after, on the spy's own topic: once it arrives, anything before it would have.
      await relay.publishAsync(terminalTopics(a.id).command, 'marker', { qos: 1 });
      await eventually(
        () => victimHeard.length === 1 && spyHeard.some((m) => m.payload === 'marker'),
        (done) => done,
        { what: 'the command and the marker to arrive', context },
      );
      expect(victimHeard).toEqual([
        { topic: terminalTopics(b.id).command, payload: 'secret-command' },
      ]);
      expect(spyHeard.every((m) => m.payload === 'marker')).toBe(true);
      // An empty retained message clears it: later tests hear what they send alone.
      await relay.publishAsync(terminalTopics(b.id).config, '', { qos: 1, retain: true });
    });

    it('an agent’s publishes onto other terminals’ topics, or against its direction, are dropped', async () => {
      const relay = await connect(RELAY.username, RELAY.password);
      const relayHeard = heard(relay);
      await relay.subscribeAsync('tps/v1/#', { qos: 1 });
      const other = terminalTopics(b.id);
      const own = terminalTopics(a.id);

      const forger = await connect(a.id, a.secret);
      for (const topic of [
        other.report,
        other.commandAck,
        other.presence,
        other.command,
        other.reportAck,
        other.configReport,
        other.facts,
        other.diagnosticReply,
        other.localCertRequest,
        // Its own topics, but the relay's direction.
        own.command,
        own.reportAck,
        own.config,
        own.diagnostic,
        own.localCert,
        'tps/v1/t/elsewhere',
      ]) {
        // QoS 1 is acknowledged all the same: Mosquitto does not tell the publisher.
        await forger.publishAsync(topic, `forged:${topic}`, { qos: 1 });
      }
      await forger.publishAsync(own.report, 'marker', { qos: 1 });
      await eventually(
        () => relayHeard,
        (m) => m.some((x) => x.payload === 'marker'),
        { what: 'the marker to reach the relay', context },
      );
      expect(relayHeard).toEqual([{ topic: own.report, payload: 'marker' }]);
    });

    it('an agent’s credential cannot take over another terminal’s session, whatever client id it sends', async () => {
      const relay = await connect(RELAY.username, RELAY.password);
      const relayHeard = heard(relay);
      await relay.subscribeAsync(terminalTopics(b.id).presence, { qos: 1 });
      const victim = await connect(b.id, b.secret, {
        clientId: agentClientId(b.id),
        clean: false,
        will: true,
      });
      const victimHeard = heard(victim);
      await victim.subscribeAsync(terminalTopics(b.id).command, { qos: 1 });
      let victimClosed = false;
      victim.on('close', () => (victimClosed = true));

      const intruders: MqttClient[] = [];
      for (const [clientId, clean] of [
        [agentClientId(b.id), false],
        [agentClientId(b.id), true],
        // The session id b gets on the agents' listener.
        [b.id, true],
      ] as const) {
        const intruder = await connect(a.id, a.secret, { clientId, clean });
        await intruder.subscribeAsync(terminalTopics(a.id).command, { qos: 1 });
        intruders.push(intruder);
      }
      const intruderHeard = intruders.map((i) => heard(i));

      await relay.publishAsync(terminalTopics(b.id).command, 'for-b-only', { qos: 1 });
      await eventually(
        () => victimHeard,
        (m) => m.some((x) => x.payload === 'for-b-only'),
        { what: 'b to receive its command', context },
      );
      expect(victimClosed).toBe(false);
      // b's last will never fired.
      expect(relayHeard.filter((m) => m.payload.includes('"connected":false'))).toEqual([]);
      expect(intruderHeard.flat()).toEqual([]);
    });

    it('ends a connection that declares a packet over max_packet_size, before sign-in', async () => {
      const { hostname, port } = new URL(broker!.url);
      const socket = net.connect({ host: hostname, port: Number(port) });
      socket.on('error', () => undefined);
      await new Promise((resolve) => socket.once('connect', resolve));
      const closed = new Promise((resolve) => socket.once('close', resolve));
      // CONNECT declaring 268,435,455 bytes (256 MB), then a trickle.
      socket.write(Buffer.from([0x10, 0xff, 0xff, 0xff, 0x7f]));
      const trickle = setInterval(() => socket.writable && socket.write(Buffer.from([0])), 50);
      try {
        await eventually(
          () => Promise.race([closed.then(() => true), sleep(100).then(() => false)]),
          (done) => done,
          { what: 'Mosquitto to close the connection', context, ms: 3000 },
        );
      } finally {
        clearInterval(trickle);
        socket.destroy();
      }
    });

    it('a terminal registered later gets in once the files are written again and Mosquitto has its SIGHUP', async () => {
      const late = await withStore((registry) => newAgent(registry));
      await expect(connect(late.id, late.secret)).rejects.toThrow();
      const stays = await connect(a.id, a.secret);

      const result = await writeBrokerFiles();
      expect(result.code).toBe(0);
      broker!.reload();
      await eventually(
        () => connect(late.id, late.secret).then(() => true),
        (ok) => ok,
        { what: 'the new terminal to be let in after the reload', context },
      );
      // An agent whose credential did not change keeps its connection through the reload.
      expect(stays.connected).toBe(true);
    });
  },
);
