/**
 * Wires the relay: the store and its two companions (change bus, leadership lock), events,
 * the links to terminals with the command outbox and report inbox, the transaction
 * service, background work and the HTTP API. Policy lives in the parts; this file only
 * makes them, in an order where each exists before what uses it, and stops them in
 * reverse (docs/architecture.md).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { pino, type Logger } from 'pino';
import type { TerminalCommand, TerminalReport } from '../protocol/index.js';
import { maskUpdateStatusText } from '../protocol/free-text.js';
import { systemClock, systemTimers, type Clock } from '../common/clock.js';
import { Authenticator } from './accounts/authenticator.js';
import { bootstrapAccount, type Bootstrap } from './accounts/bootstrap.js';
import { signInThrottle } from '../common/sign-in-throttle.js';
import { BackgroundWork } from './cluster/background.js';
import { routeNotices } from './cluster/notices.js';
import { brokerCertificate, type CloudConfig } from './config.js';
import { Pairings } from './pairing/pairings.js';
import { createFleet } from './fleet/fleet.js';
import { FleetEndOfDay } from './fleet/end-of-day.js';
import { prepareDataDir } from './data-dir.js';
import { ReportInbox } from './delivery/inbox.js';
import { CommandOutbox } from './delivery/outbox.js';
import { storedCursorTokens } from './events/cursor-token.js';
import { EventFeed } from './events/event-feed.js';
import { EventLog } from './events/event-list.js';
import { EventRetention } from './events/retention.js';
import { Webhooks } from './events/webhooks.js';
import { accountChanges } from './accounts/account-changes.js';
import { AccountAdmin } from './accounts/accounts-admin.js';
import { CredentialAdmin, type CredentialNotice } from './accounts/credentials.js';
import { RelayAddress } from './http/address.js';
import { buildHttpServer } from './http/server.js';
import { ParkedWaits } from './long-poll.js';
import { ConsoleSessions } from './console/sessions.js';
import { loggerOptions } from './logging.js';
import { SHARE_GROUP, relayClientId } from './mqtt/client-id.js';
import {
  listenerLimits,
  startEmbeddedBroker,
  type EmbeddedBroker,
} from './mqtt/embedded-broker.js';
import { MqttTerminalLink } from './mqtt/mqtt-link.js';
import { LocalCertificates } from './local-tls/local-certificates.js';
import { ApiError } from './errors.js';
import { RelayMetrics } from './ops/metrics.js';
import { relayReadiness } from './ops/readiness.js';
import { Releases } from './releases/releases.js';
import { Rollouts } from './rollouts/rollouts.js';
import type { SimulatorFleet } from './simulator/fleet.js';
import { SimulatorHost } from './simulator/host.js';
import { SimulatorPlacement } from './simulator/placement.js';
import { lockDataDir } from './store/data-dir-lock.js';
import { openBackend } from './store/open.js';
import type { Store } from './store/store.js';
import { CardDataGuard } from './terminals/card-data-guard.js';
import { LinkRouter } from './terminals/link-router.js';
import { PrintSpooler } from './terminals/print-spooler.js';
import { TerminalRegistry } from './terminals/registry.js';
import { TransactionService } from './transactions/service.js';
import { supersededCommands } from './transactions/superseded.js';
import { logDestination, partLogger } from '../common/logging.js';

/** See the simulators' broker connection below. */
const IN_PROCESS_BROKER_STREAM_WORKS = Number(process.versions.node.split('.')[0]) < 26;

export const DEFAULT_WAIT_SECONDS = 25;

export type { Bootstrap };

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

export async function startRelay(config: CloudConfig, options: RelayOptions = {}): Promise<Relay> {
  const logger =
    options.logger ?? pino(loggerOptions(config.logLevel), logDestination(config.logFormat));
  const clock = options.clock ?? systemClock;
  prepareDataDir(config.dataDir, logger, { sqlite: !config.databaseUrl });
  const dataDirLock = config.databaseUrl ? undefined : lockDataDir(config.dataDir);
  const backend = await openBackend(config, { logger: partLogger(logger, 'store') }).catch(
    (error: unknown) => {
      dataDirLock?.release();
      throw error;
    },
  );
  const { store, bus, lock } = backend;
  const closeStore = async () => {
    await backend.close();
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
    const metrics = new RelayMetrics();
    const address = new RelayAddress(config);
    let draining = false;

    // Events, their log and who is told of them.
    const eventFeed = new EventFeed();
    const parkedWaits = new ParkedWaits(
      config.maxParkedPerCredential,
      'this credential',
      config.maxParkedPerAccount,
    );
    const events = new EventLog({
      store,
      parkedWaits,
      feed: eventFeed,
      tokens: await storedCursorTokens(store),
      vendor: config.eventVendor,
      source: () => address.baseUrl,
    });
    const webhooks = new Webhooks({
      store,
      bus,
      feed: eventFeed,
      log: events,
      clock,
      logger: partLogger(logger, 'webhooks'),
      settings: {
        allowHttp: config.webhookAllowHttp,
        allowNetworks: config.webhookAllowNetworks,
        maxPerCredential: config.webhooksPerCredential,
        maxPerAccount: config.webhooksPerAccount,
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
      partLogger(logger, 'retention'),
    );

    // The links to terminals: agents over MQTT, simulated terminals in process.
    const certificate = config.mqttUrl ? undefined : brokerCertificate(config);
    const brokerTls = certificate && {
      cert: fs.readFileSync(certificate.certFile),
      key: fs.readFileSync(certificate.keyFile),
    };
    const broker: EmbeddedBroker | undefined = config.mqttUrl
      ? undefined
      : await startEmbeddedBroker({
          store,
          logger: partLogger(logger, 'broker'),
          throttle: signInThrottle(config),
          onSignInFailure: (outcome) => metrics.signInFailures.inc({ listener: 'mqtt', outcome }),
          limits: listenerLimits(config),
          onLimit: (limit) => metrics.mqttLimited.inc({ limit }),
          onConnect: (outcome) => metrics.mqttConnects.inc({ outcome }),
          ...(brokerTls ? { tls: brokerTls } : {}),
        });
    if (broker) started.push(() => broker.close());
    // Relays on one store and one external broker share the agents' traffic.
    const shared = config.databaseUrl !== undefined && config.mqttUrl !== undefined;
    const mqttLink = new MqttTerminalLink({
      url: config.mqttUrl ?? 'mqtt://embedded',
      ...(broker ? { channel: broker.relayChannel() } : {}),
      username: config.mqttUsername ?? '',
      password: config.mqttPassword ?? '',
      clientId: await relayClientId(store, shared),
      ...(shared ? { shareGroup: SHARE_GROUP } : {}),
      maxPayloadBytes: config.mqttMaxPayloadBytes,
      clock,
      logger: partLogger(logger, 'mqtt-link'),
    });
    const inProcess =
      config.simulatorMode === 'in-process'
        ? new SimulatorHost({
            delayMs: config.simulatorDelayMs,
            clock,
            logger: partLogger(logger, 'simulator'),
          })
        : undefined;
    const link = new LinkRouter(store, { SIMULATOR: inProcess ?? mqttLink, AGENT: mqttLink });

    // Commands go out through the outbox, reports come in through the inbox, over either
    // link; both hear what other relays on the store did through the change bus.
    const outbox = new CommandOutbox<TerminalCommand>({
      store,
      publish: (terminalId, command) => link.publish(terminalId, command),
      obsolete: supersededCommands(store),
      onRemoteChange: (listener) => bus.subscribe(listener),
      clock,
      logger: partLogger(logger, 'outbox'),
    });
    const service = new TransactionService({
      store,
      parkedWaits,
      reportsShared: shared,
      outbox,
      clock,
      logger: partLogger(logger, 'transactions'),
      events: eventFeed,
      localMode: (terminalId) => fleet.configs.localModeInForce(terminalId),
      settings: {
        maxUnconfirmed: config.maxUnconfirmed,
        startTtlMs: config.startTtlS * 1000,
        pauseTimeoutMs: config.pauseTimeoutS * 1000,
        gracePeriodMs: config.gracePeriodS * 1000,
      },
    });
    const cardData = new CardDataGuard(partLogger(logger, 'card-data'), (event) =>
      metrics.securityEvents.inc({ event }),
    );
    const inbox = new ReportInbox<TerminalReport>({
      apply: (terminalId, report, position) =>
        service.applyReport(terminalId, cardData.clean(terminalId, report), position),
      onRemoteChange: (listener) => bus.subscribe(listener),
      onOutcome: (outcome) => metrics.reportsApplied.inc({ outcome }),
      logger: partLogger(logger, 'inbox'),
    });
    // Rollouts of agent releases: orders out on the retained `update` topics, outcomes in.
    const rollouts = new Rollouts({
      store,
      clock,
      timers: systemTimers,
      publishOrder: (terminalId, order) => mqttLink.publishUpdateOrder(terminalId, order),
      logger: partLogger(logger, 'rollouts'),
    });
    const registry = new TerminalRegistry(store, clock, (terminalId) =>
      fleet.localCredentials.send(terminalId),
    );
    const fleet = createFleet({
      store,
      registry,
      clock,
      timers: systemTimers,
      logger: partLogger(logger, 'fleet'),
      link: {
        url: config.mqttUrl ?? 'mqtt://embedded',
        ...(broker ? { channel: broker.relayChannel() } : {}),
        username: config.mqttUsername ?? '',
        password: config.mqttPassword ?? '',
        clientId: `${await relayClientId(store, shared)}-fleet`,
        maxPayloadBytes: config.mqttMaxPayloadBytes,
      },
      hasAgent: (terminal) => terminal.kind === 'AGENT' || !inProcess,
      cardData,
      diagnosticsPerAccount: config.diagnosticsPerAccount,
    });
    const localCertificates = new LocalCertificates({
      store,
      clock,
      logger: partLogger(logger, 'local-tls'),
      answer: (terminalId, message) => mqttLink.publishLocalCert(terminalId, message),
      authorize: (principal, terminalId) =>
        service.authorizeTerminal(
          principal,
          terminalId,
          () => new ApiError('TERMINAL_NOT_FOUND', `no terminal ${terminalId}`),
        ),
    });
    link.listen({
      localCertRequest: (terminalId, request) =>
        void localCertificates.request(terminalId, request),
      updateStatus: (terminalId, status) =>
        void rollouts
          .statusReported(
            terminalId,
            cardData.masked(terminalId, 'update-status', maskUpdateStatusText(status)),
          )
          .catch((error: unknown) =>
            logger.error({ err: error, terminalId }, 'could not keep an update outcome'),
          ),
      commandAcked: (terminalId, commandId) => void outbox.acknowledged(terminalId, commandId),
      report: (terminalId, report, sequenced) => inbox.receive(terminalId, report, sequenced),
      reachable: (terminalId) => {
        outbox.republish(terminalId);
        fleet.configs
          .reachable(terminalId)
          .catch((error: unknown) =>
            logger.error({ err: error, terminalId }, 'could not send the configuration'),
          );
      },
      readerReported: (terminalId, reader) =>
        void store
          .setReaderCapabilities(terminalId, reader)
          .catch((error: unknown) =>
            logger.error({ err: error, terminalId }, 'could not keep the reader capabilities'),
          ),
      reconnected: () => {
        outbox.republish();
        void rollouts
          .republish()
          .catch((error: unknown) => logger.error({ err: error }, 'update orders not republished'));
      },
    });
    const closeDelivery = async () => {
      await outbox.close();
      await inbox.close();
      await fleet.close();
      await mqttLink.close();
    };
    started.push(closeDelivery);
    // Subscribed before agents can connect to the embedded broker (see relayChannel).
    await mqttLink.connect();
    await fleet.connect();
    const brokerUrl =
      config.mqttUrl ?? (await broker!.listen(config.mqttHost ?? config.host, config.mqttPort)).url;
    const agentBrokerUrl = config.mqttPublicUrl ?? brokerUrl;

    // The agent path's modules (agent, firmware emulation) load only when simulators use it.
    const simulators: SimulatorFleet =
      inProcess ??
      new (await import('./simulator/agent-simulators.js')).AgentSimulators({
        store,
        brokerUrl,
        // Inside the process when the broker is: no socket, and no certificate to match.
        // Not on Node 26, where the in-process stream carries nothing: the agent's CONNECT
        // never reaches the broker (cause not found yet); there they use the listener.
        ...(broker && IN_PROCESS_BROKER_STREAM_WORKS
          ? { connectInProcess: () => broker.connectInProcess() }
          : {}),
        dataDir: config.dataDir,
        delayMs: config.simulatorDelayMs,
        clock,
        logger: partLogger(logger, 'simulator'),
      });
    const pairings = new Pairings({
      store,
      registry,
      feed: eventFeed,
      bus,
      clock,
      timers: systemTimers,
      settings: {
        ttlMs: config.pairingTtlS * 1000,
        windowMs: config.pairingWindowS * 1000,
        perSource: config.pairingPerSource,
        waitsPerSource: config.pairingWaitsPerSource,
        claimFailuresPerCredential: config.pairingClaimFailuresPerCredential,
        claimFailuresPerAccount: config.pairingClaimFailuresPerAccount,
      },
      brokerUrl: () => agentBrokerUrl,
      logger: partLogger(logger, 'pairing'),
    });
    const spooler = new PrintSpooler((terminalId, contents, commandId) =>
      outbox.queue(terminalId, { type: 'print', command_id: commandId, format: 'PNG', contents }),
    );
    started.push(() => spooler.close());

    // Background work runs in the leading relay only.
    const placement = new SimulatorPlacement(
      simulators,
      bus,
      store,
      (): boolean => background.isLeading,
    );
    const background = new BackgroundWork(
      [
        { name: 'transactions', start: () => service.lead(), stop: () => service.unlead() },
        { name: 'outbox', start: () => outbox.lead(), stop: () => outbox.unlead() },
        { name: 'webhooks', start: () => webhooks.start(), stop: () => webhooks.stop() },
        { name: 'retention', start: () => retention.start(), stop: () => retention.stop() },
        { name: 'rollouts', start: () => rollouts.lead(), stop: () => rollouts.unlead() },
        {
          name: 'simulators',
          start: () => placement.reconcile(),
          stop: () => simulators.close(),
        },
      ],
      partLogger(logger, 'background'),
    );
    started.push(() => background.stop());
    const authenticator = new Authenticator(store, undefined, {
      throttle: signInThrottle(config),
      maxHashing: config.signInHashes,
      onFailure: (outcome) => metrics.signInFailures.inc({ listener: 'http', outcome }),
    });
    // A revoked or rotated credential, here or on another relay: nothing remembers it.
    const credentialChanged = async (notice: CredentialNotice) => {
      if (notice.type === 'API') authenticator.forget(notice.username);
      else broker?.disconnectAgent(notice.username);
    };
    const credentials = new CredentialAdmin({
      store,
      bus,
      clock,
      changed: credentialChanged,
      posCredentialChanged: (terminalId) => fleet.localCredentials.send(terminalId),
      configured: bootstrap.configured,
    });
    const accountChanged = accountChanges({
      forget: (accountId) => authenticator.accounts.forget(accountId),
      reconcileWebhooks: () => webhooks.reconcile(),
      terminalsOf: async (accountId) =>
        (await registry.listTerminals(accountId)).map((terminal) => terminal.id),
      sendVerifiers: (terminalId) => fleet.localCredentials.send(terminalId),
      logger,
    });
    const accounts = new AccountAdmin({ store, bus, clock, changed: accountChanged.committed });
    for (const username of bootstrap.replaced) {
      logger.warn({ username }, 'account credential removed: TPS_ACCOUNT_USERNAME replaces it');
      await bus.announce({ kind: 'credential', type: 'API', username });
    }
    // Changes committed by other relays on the same store wake what waits here.
    const unsubscribe = bus.subscribe(
      routeNotices(
        {
          transaction: (notice) => service.applyRemote(notice),
          events: (notice) =>
            notice.events ? eventFeed.publish(notice.events) : eventFeed.nudge(),
          // Notices were missed: what they would have told is read again, announcements too.
          resync: async () => {
            authenticator.forgetAll();
            await Promise.all([
              service.resync(),
              webhooks.reconcile(),
              placement.reconcile(),
              broker?.recheckAgents(),
            ]);
          },
          webhooks: () => webhooks.reconcile(),
          simulator: async (terminalId) => placement.announced(await store.getTerminal(terminalId)),
          credential: credentialChanged,
          account: accountChanged.heard,
          pairing: (notice) => pairings.claimed(notice.code),
        },
        logger,
      ),
    );
    started.push(unsubscribe);
    metrics.watch({
      parkedTransactionPolls: () => service.feed.size,
      parkedEventWaits: () => eventFeed.size,
      commandsAwaitingAck: () => outbox.awaitingAck,
      leading: () => background.isLeading,
      ready: () => !draining && mqttLink.connected,
      brokerConnected: () => mqttLink.connected,
      agentsConnected: () => broker?.connectedAgents(),
    });

    const releases = new Releases({
      store,
      operatorAccountId: bootstrap.operatorAccountId,
      dir: config.releaseDir ?? path.join(config.dataDir, 'releases'),
      publicKeyPem: config.releasePublicKey
        ? fs.readFileSync(config.releasePublicKey, 'utf8')
        : undefined,
      maxUploads: config.releaseMaxUploads,
      maxDiskBytes: config.releaseMaxDiskBytes,
      clock,
      onCheckFault: (error) => logger.warn({ err: error }, 'a release check thread failed'),
    });
    started.push(() => releases.close());
    const app = buildHttpServer({
      logger,
      authenticator,
      credentials,
      accounts,
      console: {
        authenticator,
        sessions: await ConsoleSessions.open(store, Date.now, authenticator.accounts),
      },
      ...(config.trustProxy ? { trustProxy: config.trustProxy } : {}),
      limits: {
        requestTimeoutMs: config.httpRequestTimeoutS * 1000,
        headersTimeoutMs: config.httpHeadersTimeoutS * 1000,
        maxConnections: config.httpMaxConnections,
      },
      service,
      registry,
      spooler,
      events,
      webhooks,
      pairings,
      localCertificates,
      fleet: {
        ...fleet,
        endOfDay: new FleetEndOfDay({
          registry,
          queue: (terminalId, command) => outbox.queue(terminalId, command),
        }),
      },
      startSimulator: (terminal) => placement.place(terminal),
      simulatorReaders: inProcess ? ['native'] : ['native', 'zvt'],
      ops: {
        metrics,
        readiness: relayReadiness({
          store,
          draining: () => draining,
          brokerConnected: () => mqttLink.connected,
          logger,
        }),
      },
      agentBrokerUrl: () => agentBrokerUrl,
      defaultWaitSeconds: DEFAULT_WAIT_SECONDS,
      ...(config.tlsCert && config.tlsKey
        ? { tls: { certFile: config.tlsCert, keyFile: config.tlsKey } }
        : {}),
      ...(config.publicUrl ? { publicUrl: config.publicUrl } : {}),
      rollouts,
      releases: { store, releases },
    });
    await app.listen({ host: config.host, port: config.port });
    const port = (app.server.address() as AddressInfo).port;
    address.listening(port);
    lock.start(
      () => void background.lead(),
      () => void background.lose(),
    );
    started.push(() => lock.stop());
    // The embedded lock leads at once: its background work has started when start resolves.
    await background.settled();
    if (config.defaultSimulator && (await store.listTerminals('SIMULATOR')).length === 0) {
      const { terminal, issued } = await registry.createSimulator(bootstrap.accountId);
      await placement.place(terminal);
      bootstrap.simulator = issued;
    }

    let closed = false;
    return {
      baseUrl: address.baseUrl,
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
        pairings.stop();
        await app.close();
        await spooler.close();
        await releases.close();
        unsubscribe();
        // Work stops here before the lead is given up: no overlap with the next leader.
        await background.stop();
        await lock.stop();
        await closeDelivery();
        await broker?.close();
        await closeStore();
      },
    };
  }
}
