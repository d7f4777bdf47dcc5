/**
 * Local mode as the field runs it, for end-to-end tests (docs/local-mode.md): a real relay
 * with its embedded broker, a real agent with the emulated card reader, its MQTT link
 * through a switch the test cuts and restores (and, when asked, a tap between switch and
 * broker that holds or hands again what passes). The fleet configuration's `local_api`
 * turns the agent's local API on: HTTPS with the certificate the relay signed; the POS
 * trusts only the relay's trust answer and signs in with the terminal's POS credential,
 * the one the cloud path takes, checked by the verifiers the relay delivered.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import pino from 'pino';
import { expect } from 'vitest';
import { startAgent, type AgentDeps, type RunningAgent } from '../../agent/agent.js';
import type { AgentConfig } from '../../agent/config.js';
import { emulatedReader, type EmulatedReader } from '../../agent/emulated-reader.js';
import { LOCAL_CREDENTIALS_FILE } from '../../agent/local-api/credentials.js';
import { MemoryJournal, PosClient } from '../../client/index.js';
import { trustingFetch } from '../../client/local-path.js';
import type { LocalTrust } from '../../client/local-trust.js';
import type { CloudConfigInput } from '../../cloud/config.js';
import type { Clock } from '../../common/clock.js';
import { TerminalCreateResponse } from '../../protocol/api.js';
import type { MachineSettings } from '../../protocol/transaction-rules/state-machine.js';
import { agentConfig } from '../agent-harness.js';
import { LinkSwitch, until } from './link-switch.js';
import { MqttTap } from './mqtt-tap.js';
import { basicAuth, post, startTestRelay, type ApiResponse, type TestRelay } from './relay.js';

export interface Credential {
  username: string;
  password: string;
}

export type LocalAnswer = Pick<ApiResponse, 'status' | 'body'>;

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface LocalModeRigOptions {
  /** The relay's configuration beyond the test relay's. */
  relay?: Partial<CloudConfigInput>;
  /** An MqttTap between the switch and the broker. */
  tap?: boolean;
  /**
   * The engine's settings (short timers, small limits): `startAgent`'s `localMode.settings`.
   * Given, the engine runs from start; the fleet's `local_api` still decides the listener.
   */
  settings?: Partial<MachineSettings>;
  /** The agent's clock (default the system's). */
  clock?: Clock;
  /** The agent's log level; its lines are kept in `logged` (default silent). */
  logLevel?: 'info' | 'silent';
}

export interface LocalModeRig {
  relay: TestRelay;
  terminal: TerminalCreateResponse;
  terminalId: string;
  /** The terminal's POS credential: the cloud path's, and the local path's. */
  pos: Credential;
  link: LinkSwitch;
  /** Present when asked for (`tap: true`). */
  tap: MqttTap | undefined;
  config: AgentConfig;
  emulated: EmulatedReader;
  /** The running agent; undefined while a test has it stopped. */
  agent: RunningAgent | undefined;
  /** The port the fleet's `local_api.listen` names. */
  port: number;
  /** The relay's trust answer, once `enableLocalApi` has run. */
  trust: LocalTrust;
  /** Reader runs per transaction: the sequences of its records, each a charge attempt. */
  runs: Map<string, Set<number>>;
  /** How often the reader ended each transaction cancelled (its CANCELLED records). */
  cancelled: Map<string, number>;
  /** Transactions the reader reversed. */
  reversed: Set<string>;
  /** The agent's log lines (with `logLevel: 'info'`). */
  logged: string[];
  start(): Promise<RunningAgent>;
  /** Sets the terminal's fleet `local_api`. */
  setLocalApi(localApi: Record<string, unknown>): Promise<void>;
  /**
   * Turns the local API on from the fleet on `port`, waits until it listens, the
   * configuration is in force at the relay, the trust answer names the port and the agent
   * holds the relay's verifiers.
   */
  enableLocalApi(extra?: Record<string, unknown>): Promise<void>;
  /** Waits until the relay's store says the configuration is applied by the agent. */
  inForce(): Promise<void>;
  /** A request to the agent's local API over HTTPS, trusting only the relay's answer. */
  localPos(
    operation: string,
    body: Record<string, unknown>,
    credential?: Credential,
  ): Promise<LocalAnswer>;
  /** A request to the relay with the terminal's POS credential. */
  cloudPos(operation: string, body: Record<string, unknown>): Promise<ApiResponse>;
  /** A request to the relay with the account credential. */
  account(operation: string, body: Record<string, unknown>): Promise<ApiResponse>;
  linkDown(): Promise<void>;
  linkUp(): Promise<void>;
  /** Waits until the relay shows the pair in `state`. */
  relayShows(externalId: string, state: string): Promise<void>;
  /** The states of the relay's `Transaction` events of one transaction, in order. */
  eventsOf(transactionId: string): Promise<string[]>;
  /** The revision of the verifier set the agent keeps (its file is written before use). */
  keptRevision(): number | undefined;
  /** The revision of the terminal's credentials in the relay's store. */
  storeRevision(): Promise<number>;
  /** Waits until the agent holds the set the relay's store has now. */
  carried(): Promise<void>;
  /**
   * The table's two checks for each pair: the reader charged it at most once, and the
   * relay shows it once (by external id, and in a search), with the reader's outcome.
   */
  checkReaderAndRelay(pairs: ReadonlyArray<{ externalId: string; id: string }>): Promise<void>;
  close(): Promise<void>;
}

export async function startLocalModeRig(options: LocalModeRigOptions = {}): Promise<LocalModeRig> {
  const relay = await startTestRelay(options.relay ?? {});
  const created = await post(relay.baseUrl, 'v1', '/terminal/create', {}, relay.account);
  const terminal = TerminalCreateResponse.parse(created.body);
  const terminalId = terminal.terminal_id;
  const pos = { username: terminal.username, password: terminal.password };
  const broker = new URL(terminal.agent.broker_url);
  const brokerAddress = { host: broker.hostname, port: Number(broker.port) };
  const tap = options.tap ? new MqttTap(brokerAddress) : undefined;
  const link = new LinkSwitch(tap ? await tap.listen() : brokerAddress);
  const config = agentConfig({
    terminal_id: terminalId,
    log_level: options.logLevel ?? 'silent',
    broker: {
      url: await link.listen(),
      username: terminal.agent.username,
      password: terminal.agent.password,
    },
  });
  const emulated = emulatedReader({ delayMs: 20 });
  const runs = new Map<string, Set<number>>();
  const cancelled = new Map<string, number>();
  const reversed = new Set<string>();
  const logged: string[] = [];
  emulated.firmware.on('record', (record) => {
    if (record.result_code === 'REVERSED') reversed.add(record.transaction_id);
    if (record.phase === 'CANCELLED') {
      cancelled.set(record.transaction_id, (cancelled.get(record.transaction_id) ?? 0) + 1);
    }
    if (record.sequence === 0) return;
    const seen = runs.get(record.transaction_id) ?? new Set<number>();
    runs.set(record.transaction_id, seen.add(record.sequence));
  });
  const port = await freePort();

  const account = (operation: string, body: Record<string, unknown>) =>
    post(relay.baseUrl, 'v1', operation, body, relay.account);
  const storeRevision = async () => (await relay.store.terminalCredentials(terminalId)).revision;
  const keptRevision = (): number | undefined => {
    try {
      return JSON.parse(fs.readFileSync(path.join(config.data_dir, LOCAL_CREDENTIALS_FILE), 'utf8'))
        .revision;
    } catch {
      return undefined;
    }
  };

  let trusted: { trust: LocalTrust; fetch: typeof fetch } | undefined;
  const rig: LocalModeRig = {
    relay,
    terminal,
    terminalId,
    pos,
    link,
    tap,
    config,
    emulated,
    agent: undefined,
    port,
    trust: undefined as unknown as LocalTrust,
    runs,
    cancelled,
    reversed,
    logged,

    async start() {
      const deps: AgentDeps = {
        reader: emulated.reader,
        logger: pino(
          { level: options.logLevel ?? 'silent' },
          { write: (line: string) => void logged.push(line) },
        ),
        tuning: {
          reconnect: { initialMs: 20, maxMs: 100 },
          localListenRetry: { initialMs: 20, maxMs: 100 },
        },
        localTls: { addresses: () => ({ ip_addresses: ['127.0.0.1'], dns_names: [] }) },
        ...(options.clock ? { clock: options.clock } : {}),
        ...(options.settings ? { localMode: { settings: options.settings } } : {}),
      };
      rig.agent = await startAgent(config, deps);
      return rig.agent;
    },

    async setLocalApi(localApi) {
      const set = await account('/fleet/config/set', {
        scope: { terminal_id: terminalId },
        config: { local_api: localApi },
      });
      expect(set.status).toBe(200);
    },

    async inForce() {
      await until('the configuration in force', async () => {
        const got = await account('/fleet/config/get', { scope: { terminal_id: terminalId } });
        return got.body.terminals?.[0]?.in_sync === true;
      });
    },

    async enableLocalApi(extra = {}) {
      await rig.setLocalApi({ enabled: true, listen: { host: '127.0.0.1', port }, ...extra });
      await until('listening', () => rig.agent?.local?.api?.port === port);
      await rig.inForce();
      const client = new PosClient({
        baseUrl: relay.baseUrl,
        ...pos,
        terminalId,
        journal: new MemoryJournal(),
      });
      try {
        await until('the trust answer names the port', async () => {
          rig.trust = await client.api.localTrust(terminalId);
          return rig.trust.port === port;
        });
      } finally {
        await client.close();
      }
      await rig.carried();
    },

    async localPos(operation, body, credential = pos) {
      const { trust } = rig;
      // One dispatcher per trust answer: a new one per request would leave its connection
      // open, and the local API caps its connections.
      if (trusted?.trust !== trust) {
        trusted = { trust, fetch: trustingFetch(trust.ca, trust.serverName) };
      }
      const response = await trusted.fetch(`${trust.baseUrls[0]}/v1${operation}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: basicAuth(credential) },
        body: JSON.stringify({ terminal_id: terminalId, ...body }),
      });
      return { status: response.status, body: await response.json() };
    },

    cloudPos: (operation, body) =>
      post(relay.baseUrl, 'v1', operation, { terminal_id: terminalId, ...body }, pos),
    account,

    async linkDown() {
      link.cut();
      await until('the link down', () => !rig.agent!.link.connected);
    },
    async linkUp() {
      link.restore();
      await until('the link up', () => rig.agent!.link.connected);
    },

    relayShows: (externalId, state) =>
      until(`${externalId} ${state} on the relay`, async () => {
        const got = await rig.cloudPos('/transaction/get', { external_id: externalId });
        return got.body?.transaction?.state === state;
      }),

    async eventsOf(transactionId) {
      const answer = await account('/event/list', {
        filter: { terminal_id: terminalId },
        limit: 1000,
      });
      expect(answer.status).toBe(200);
      return (answer.body.events as Array<{ data: { id: string; state: string } }>)
        .filter((event) => event.data?.id === transactionId)
        .map((event) => event.data.state);
    },

    keptRevision,
    storeRevision,
    async carried() {
      const revision = await storeRevision();
      await until(`revision ${revision} on the agent`, () => keptRevision() === revision);
    },

    async checkReaderAndRelay(pairs) {
      for (const { externalId, id } of pairs) {
        expect(runs.get(id)?.size ?? 0, externalId).toBeLessThanOrEqual(1);
        // The reader's outcome is what the agent's record says: the relay shows it once
        // the agent's reports are all applied.
        await until('the outbox empty', () => rig.agent!.journal.pendingReports().length === 0);
        const held = rig.agent!.local!.engine.get(terminalId, externalId)!.txn;
        const got = await account('/transaction/get', {
          terminal_id: terminalId,
          external_id: externalId,
        });
        expect(got.body.transaction, externalId).toMatchObject({
          id,
          state: held.state,
          ...(held.result_code !== undefined ? { result_code: held.result_code } : {}),
        });
        const found = await account('/transaction/search', {
          terminal_id: terminalId,
          external_id: externalId,
        });
        expect(
          found.body.transactions.map((t: { id: string }) => t.id),
          externalId,
        ).toEqual([id]);
      }
    },

    async close() {
      await rig.agent?.stop();
      await emulated.close();
      await link.close();
      await tap?.close();
      await relay.close();
    },
  };
  return rig;
}
