/**
 * Assembles the relay: store, terminal link, transaction service and HTTP API, and
 * the first-start bootstrap (account credential, one simulated terminal).
 */
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
import { lockDataDir } from './store/data-dir-lock.js';
import { openStore } from './store/open.js';
import type { Store, StoreChange } from './store/store.js';
import { BackgroundWork } from './cluster/background.js';
import { RelayMetrics } from './ops/metrics.js';
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
  /** Runs the background work (deadlines, re-sending, webhooks, retention, simulators). */
  background: BackgroundWork;
  metrics: RelayMetrics;
  /**
   * Stops taking traffic (GET /ready answers 503) for `TPS_SHUTDOWN_DELAY_S`, so the load
   * balancer moves away, then closes: parked long polls answer the current state and their
   * clients poll again, through another relay.
   */
  close(): Promise<void>;
}

export interface RelayOptions {
  logger?: Logger;
  clock?: Clock;
}

const ACCOUNT_SETTING = 'default_account_id';
const TOKEN_KEY_SETTING = 'event_token_key';

/**
 * The relay's MQTT client id. Alone on a broker, it is stable across restarts (kept with
 * the data), so the broker keeps its session; relays sharing a store also share agent
 * traffic in clean sessions, and each process needs an id of its own.
 */
async function mqttClientId(store: Store, shared: boolean): Promise<string> {
  const stored = await store.claimSetting('relay_instance_id', randomBytes(6).toString('hex'));
  return shared ? `tps-relay-${stored}-${randomBytes(4).toString('hex')}` : `tps-relay-${stored}`;
}

/** Agents' traffic is shared among the relays of one store through this group. */
const SHARE_GROUP = 'tps-relay';

/** The key that signs event-list tokens, made once and kept, so tokens survive restarts. */
async function tokenKey(store: Store): Promise<Buffer> {
  const stored = await store.claimSetting(TOKEN_KEY_SETTING, randomBytes(32).toString('base64'));
  return Buffer.from(stored, 'base64');
}

export async function startRelay(config: CloudConfig, options: RelayOptions = {}): Promise<Relay> {
  const logger = options.logger ?? pino(loggerOptions(config.logLevel));
  const clock = options.clock ?? systemClock;
  const dataDirLock = config.databaseUrl ? undefined : lockDataDir(config.dataDir);
  const store = await openStore(config, { logger: logger.child({ part: 'store' }) }).catch(
    (error: unknown) => {
      dataDirLock?.release();
      throw error;
    },
  );
  const closeStore = async () => {
    await store.close();
    dataDirLock?.release();
  };
  // What has started, to be stopped in reverse should a later part fail to start (a port
  // taken): a relay that cannot serve its API must exit, not run on half started.
  const started: Array<() => Promise<void> | void> = [closeStore];
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

    let draining = false;
    // Relays on one store and one external broker share the agents' traffic.
    const shared = config.databaseUrl !== undefined && config.mqttUrl !== undefined;
    const broker: EmbeddedBroker | undefined = config.mqttUrl
      ? undefined
      : await startEmbeddedBroker({ store, logger: logger.child({ part: 'broker' }) });
    if (broker) started.push(() => broker.close());
    const mqttLink = new MqttTerminalLink({
      url: config.mqttUrl ?? 'mqtt://embedded',
      ...(broker ? { connectInProcess: () => broker.connectInProcess() } : {}),
      username: config.mqttUsername ?? broker?.relayCredential.username ?? '',
      password: config.mqttPassword ?? broker?.relayCredential.password ?? '',
      clientId: await mqttClientId(store, shared),
      ...(shared ? { shareGroup: SHARE_GROUP } : {}),
      onReportOutcome: (outcome) => metrics.reportsApplied.inc({ outcome }),
      store,
      clock,
      logger: logger.child({ part: 'mqtt-link' }),
    });
    const metrics = new RelayMetrics({
      parkedTransactionPolls: () => service.feed.size,
      parkedEventWaits: () => eventFeed.size,
      commandsAwaitingAck: () => mqttLink.awaitingAck,
      leading: () => background.isLeading,
      ready: () => !draining && mqttLink.connected,
      brokerConnected: () => mqttLink.connected,
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

    const background = new BackgroundWork(
      [
        { name: 'transactions', start: () => service.lead(), stop: () => service.unlead() },
        { name: 'webhooks', start: () => webhooks.start(), stop: () => webhooks.stop() },
        { name: 'retention', start: () => retention.start(), stop: () => retention.stop() },
        {
          name: 'simulators',
          start: async () => {
            const terminals = await store.listTerminals('SIMULATOR');
            await Promise.all(terminals.map((t) => simulators.attach(t)));
          },
          stop: () => simulators.close(),
        },
      ],
      logger.child({ part: 'background' }),
    );
    started.push(() => background.stop());
    // Changes committed by other relays on the same store wake what waits here.
    const unwatch = store.watch((change: StoreChange) => {
      switch (change.kind) {
        case 'transaction':
          void service.applyRemote(change).catch((error: unknown) => {
            logger.warn({ err: error }, 'could not apply a change from another relay');
          });
          return;
        case 'events':
          if (change.events) eventFeed.publish(change.events);
          else eventFeed.nudge();
          return;
        case 'resync':
          eventFeed.nudge();
          service.resync().catch((error: unknown) => {
            logger.warn({ err: error }, 'could not re-read parked long polls and deadlines');
          });
          return;
        case 'webhooks':
          webhooks.reconcile().catch((error: unknown) => {
            logger.warn({ err: error }, 'could not bring webhook deliveries in line');
          });
          return;
        case 'simulator':
          if (!background.isLeading) return;
          store
            .getTerminal(change.terminalId)
            .then((terminal) => terminal && simulators.attach(terminal))
            .catch((error: unknown) => {
              logger.warn({ err: error, terminalId: change.terminalId }, 'simulator not started');
            });
          return;
        default:
          return;
      }
    });
    started.push(unwatch);

    const app = buildHttpServer({
      logger,
      authenticator: new Authenticator(store),
      service,
      registry,
      spooler,
      events,
      webhooks,
      // The leading relay hosts simulated terminals; another one tells it of a new one.
      startSimulator: async (terminal) => {
        if (background.isLeading) await simulators.attach(terminal);
        else await store.announce({ kind: 'simulator', terminalId: terminal.id });
      },
      ops: {
        metrics,
        readiness: {
          async check() {
            const storeCheck = await store.getSetting(ACCOUNT_SETTING).then(
              () => true as const,
              (error: unknown) => `store unreachable: ${String(error)}`,
            );
            return {
              serving: draining ? 'shutting down' : true,
              store: storeCheck,
              broker: mqttLink.connected ? true : 'not connected to the MQTT broker',
            };
          },
        },
      },
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
    const leadership = store.leadership();
    leadership.start(
      () => void background.lead(),
      () => void background.lose(),
    );
    started.push(() => leadership.stop());
    // An embedded store leads at once: its background work has started when start resolves.
    await background.settled();
    if (config.defaultSimulator && (await store.listTerminals('SIMULATOR')).length === 0) {
      const { terminal, issued } = await registry.createSimulator(bootstrap.accountId);
      if (background.isLeading) await simulators.attach(terminal);
      else await store.announce({ kind: 'simulator', terminalId: terminal.id });
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
      background,
      metrics,
      async close() {
        if (closed) return;
        closed = true;
        draining = true;
        if (config.shutdownDelayS > 0) {
          logger.info({ seconds: config.shutdownDelayS }, 'draining before shutdown');
          await new Promise((resolve) => setTimeout(resolve, config.shutdownDelayS * 1000));
        }
        // Parked long polls answer the current state now, so the server can close.
        service.stop();
        events.stop();
        await app.close();
        unwatch();
        // Work stops here before the lead is given up: no overlap with the next leader.
        await background.stop();
        await leadership.stop();
        await mqttLink.close();
        await broker?.close();
        await closeStore();
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
  let firstStart = false;
  if (!accountId) {
    // Relays started together on a new store each propose an account; one is kept.
    const candidate = newAccountId();
    await store.ensureAccount(candidate, now);
    accountId = await store.claimSetting(ACCOUNT_SETTING, candidate);
    firstStart = accountId === candidate;
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
