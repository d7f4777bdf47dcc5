/**
 * Assembles the relay: store, terminal link, transaction service and HTTP API, and
 * the first-start bootstrap (account credential, one simulated terminal).
 */
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { pino, type Logger } from 'pino';
import type { SimulatorCreateResponse } from '../protocol/index.js';
import { Authenticator } from './accounts/authenticator.js';
import { hashGeneratedSecret, hashSecret } from './accounts/secrets.js';
import { randomBytes } from 'node:crypto';
import { CursorTokens } from './events/cursor-token.js';
import { EventFeed } from './events/event-feed.js';
import { EventLog } from './events/event-list.js';
import { EventRetention } from './events/retention.js';
import { Webhooks } from './events/webhooks.js';
import { systemClock, type Clock } from './clock.js';
import type { CloudConfig } from './config.js';
import { buildHttpServer } from './http/server.js';
import { cohortOf, newAccountId, newSecret, newUsername } from './ids.js';
import { loggerOptions } from './logging.js';
import { startEmbeddedBroker, type EmbeddedBroker } from './mqtt/embedded-broker.js';
import { MqttTerminalLink } from './mqtt/mqtt-link.js';
import type { SimulatorFleet } from './simulator/fleet.js';
import { SimulatorHost } from './simulator/host.js';
import { LinkRouter } from './terminals/link-router.js';
import { SqliteStore } from './store/sqlite.js';
import type { Store } from './store/store.js';
import { PrintSpooler } from './terminals/print-spooler.js';
import { TerminalRegistry } from './terminals/registry.js';
import { TransactionService } from './transactions/service.js';

export const DEFAULT_WAIT_SECONDS = 25;

export interface Bootstrap {
  accountId: string;
  /** The event subject that covers every terminal of the account. */
  cohortId: string;
  /** Generated at first start; shown once. */
  accountCredential?: { username: string; password: string };
  /** Created at first start; shown once. */
  simulator?: SimulatorCreateResponse;
}

export interface Relay {
  /** Base address without the version segment, e.g. http://127.0.0.1:8080/pos */
  baseUrl: string;
  port: number;
  bootstrap: Bootstrap;
  store: Store;
  service: TransactionService;
  simulators: SimulatorFleet;
  /** The broker agents connect to. */
  brokerUrl: string;
  registry: TerminalRegistry;
  events: EventLog;
  webhooks: Webhooks;
  retention: EventRetention;
  logger: Logger;
  close(): Promise<void>;
}

export interface RelayOptions {
  logger?: Logger;
  clock?: Clock;
}

const ACCOUNT_SETTING = 'default_account_id';
const TOKEN_KEY_SETTING = 'event_token_key';

/** This relay's identity, made at first start and kept with its data. */
async function relayInstanceId(store: Store): Promise<string> {
  const stored = await store.getSetting('relay_instance_id');
  if (stored) return stored;
  const id = randomBytes(6).toString('hex');
  await store.putSetting('relay_instance_id', id);
  return id;
}

/** The key that signs event-list tokens, made once and kept, so tokens survive restarts. */
async function tokenKey(store: Store): Promise<Buffer> {
  const stored = await store.getSetting(TOKEN_KEY_SETTING);
  if (stored) return Buffer.from(stored, 'base64');
  const key = randomBytes(32);
  await store.putSetting(TOKEN_KEY_SETTING, key.toString('base64'));
  return key;
}

export async function startRelay(config: CloudConfig, options: RelayOptions = {}): Promise<Relay> {
  const logger = options.logger ?? pino(loggerOptions(config.logLevel));
  const clock = options.clock ?? systemClock;
  const store = new SqliteStore(path.join(config.dataDir, 'relay.sqlite'));
  // What has started, to be stopped in reverse should a later part fail to start (a port
  // taken): a relay that cannot serve its API must exit, not run on half started.
  const started: Array<() => Promise<void> | void> = [() => store.close()];
  try {
    return await startParts();
  } catch (error) {
    for (const stop of started.reverse()) await Promise.resolve(stop()).catch(() => undefined);
    throw error;
  }

  async function startParts(): Promise<Relay> {
    const bootstrap = await bootstrapAccount(store, config, clock);

    const eventFeed = new EventFeed();
    let baseUrl = '';
    const events = new EventLog({
      store,
      feed: eventFeed,
      tokens: new CursorTokens(await tokenKey(store)),
      vendor: config.eventVendor,
      source: () => baseUrl,
    });
    const webhooks = new Webhooks({
      store,
      feed: eventFeed,
      log: events,
      clock,
      logger: logger.child({ part: 'webhooks' }),
      settings: {
        allowHttp: config.webhookAllowHttp,
        retryBaseMs: config.webhookRetryBaseMs,
        retryCapMs: config.webhookRetryCapMs,
        disableAfterMs: config.webhookDisableAfterS * 1000,
        timeoutMs: 10_000,
      },
    });
    const retention = new EventRetention(
      store,
      clock,
      config.eventRetentionS * 1000,
      () => webhooks.oldestNeeded(),
      logger.child({ part: 'retention' }),
    );

    const broker: EmbeddedBroker | undefined = config.mqttUrl
      ? undefined
      : await startEmbeddedBroker({ store, logger: logger.child({ part: 'broker' }) });
    if (broker) started.push(() => broker.close());
    const mqttLink = new MqttTerminalLink({
      url: config.mqttUrl ?? 'mqtt://embedded',
      ...(broker ? { connectInProcess: () => broker.connectInProcess() } : {}),
      username: config.mqttUsername ?? broker?.relayCredential.username ?? '',
      password: config.mqttPassword ?? broker?.relayCredential.password ?? '',
      // Stable across restarts of this relay (same data directory), so that an external
      // broker keeps its session and what agents sent while it was down.
      clientId: `tps-relay-${await relayInstanceId(store)}`,
      store,
      clock,
      logger: logger.child({ part: 'mqtt-link' }),
    });
    // Subscribed before agents can connect to the embedded broker (see connectInProcess).
    await mqttLink.connect();
    started.push(() => mqttLink.close());
    const brokerUrl =
      config.mqttUrl ?? (await broker!.listen(config.mqttHost ?? config.host, config.mqttPort)).url;
    const agentBrokerUrl = config.mqttPublicUrl ?? brokerUrl;

    const inProcess =
      config.simulatorMode === 'in-process'
        ? new SimulatorHost({
            delayMs: config.simulatorDelayMs,
            clock,
            logger: logger.child({ part: 'simulator' }),
          })
        : undefined;
    // The agent path's modules (agent, firmware emulation) load only when simulators use it.
    const simulators: SimulatorFleet =
      inProcess ??
      new (await import('./simulator/agent-simulators.js')).AgentSimulators({
        store,
        brokerUrl,
        dataDir: config.dataDir,
        delayMs: config.simulatorDelayMs,
        clock,
        logger: logger.child({ part: 'simulator' }),
      });
    const service = new TransactionService({
      store,
      link: new LinkRouter(store, { SIMULATOR: inProcess ?? mqttLink, AGENT: mqttLink }),
      clock,
      logger: logger.child({ part: 'transactions' }),
      events: eventFeed,
      settings: {
        maxUnconfirmed: config.maxUnconfirmed,
        startTtlMs: config.startTtlS * 1000,
        pauseTimeoutMs: config.pauseTimeoutS * 1000,
        gracePeriodMs: config.gracePeriodS * 1000,
      },
    });
    const registry = new TerminalRegistry(store, clock);
    const spooler = new PrintSpooler(clock, (terminalId, contents, commandId) =>
      service.sendCommand(terminalId, {
        type: 'print',
        command_id: commandId,
        format: 'PNG',
        contents,
      }),
    );

    await service.start();
    started.push(
      () => service.stop(),
      () => simulators.close(),
    );
    await Promise.all((await store.listTerminals('SIMULATOR')).map((t) => simulators.attach(t)));

    const app = buildHttpServer({
      logger,
      authenticator: new Authenticator(store),
      service,
      registry,
      spooler,
      events,
      webhooks,
      startSimulator: (terminal) => simulators.attach(terminal),
      agentBrokerUrl: () => agentBrokerUrl,
      defaultWaitSeconds: DEFAULT_WAIT_SECONDS,
      ...(config.tlsCert && config.tlsKey
        ? { tls: { certFile: config.tlsCert, keyFile: config.tlsKey } }
        : {}),
      ...(config.publicUrl ? { publicUrl: config.publicUrl } : {}),
    });
    await app.listen({ host: config.host, port: config.port });
    const port = (app.server.address() as AddressInfo).port;
    const scheme = config.tlsCert ? 'https' : 'http';
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    baseUrl = config.publicUrl ?? `${scheme}://${host}:${port}/pos`;
    await webhooks.start();
    retention.start();

    if (config.defaultSimulator && (await store.listTerminals('SIMULATOR')).length === 0) {
      const { terminal, issued } = await registry.createSimulator(bootstrap.accountId);
      await simulators.attach(terminal);
      bootstrap.simulator = issued;
    }

    let closed = false;
    return {
      baseUrl,
      port,
      bootstrap,
      store,
      service,
      simulators,
      brokerUrl: agentBrokerUrl,
      registry,
      events,
      webhooks,
      retention,
      logger,
      async close() {
        if (closed) return;
        closed = true;
        // Parked long polls answer the current state now, so the server can close.
        service.stop();
        events.stop();
        await app.close();
        retention.stop();
        await webhooks.stop();
        await simulators.close();
        await mqttLink.close();
        await broker?.close();
        await store.close();
      },
    };
  }
}

/** The default account, its configured credential, or one generated and shown at first start. */
async function bootstrapAccount(
  store: Store,
  config: CloudConfig,
  clock: Clock,
): Promise<Bootstrap> {
  const now = clock.now().toISOString();
  let accountId = await store.getSetting(ACCOUNT_SETTING);
  const firstStart = accountId === undefined;
  if (!accountId) {
    accountId = newAccountId();
    await store.ensureAccount(accountId, now);
    await store.putSetting(ACCOUNT_SETTING, accountId);
  }
  const bootstrap: Bootstrap = { accountId, cohortId: cohortOf(accountId) };
  if (config.accountUsername && config.accountPassword) {
    const existing = await store.findCredential(config.accountUsername);
    if (existing && existing.accountId !== accountId) {
      throw new Error(`TPS_ACCOUNT_USERNAME ${config.accountUsername} belongs to another account`);
    }
    await store.putCredential({
      username: config.accountUsername,
      secretHash: await hashSecret(config.accountPassword),
      accountId,
      createdAt: now,
    });
  } else if (firstStart) {
    const credential = { username: newUsername(), password: newSecret() };
    await store.putCredential({
      username: credential.username,
      secretHash: hashGeneratedSecret(credential.password),
      accountId,
      createdAt: now,
    });
    bootstrap.accountCredential = credential;
  }
  return bootstrap;
}
