/**
 * The agent, wired: journal, executor, heartbeat and MQTT link around a card reader and a
 * printer given from outside (hardware.ts opens the configured ones; tests pass their own).
 *
 * ```
 *   relay ──cmd──▶ link ──▶ executor ──▶ reader / printer
 *                   ▲          │ journal first: commands, transactions, outbox
 *                   └─report◀──┴── heartbeat (status on change and every heartbeat_s)
 * ```
 */
import { VERSION } from '../common/version.js';
import type { Duplex } from 'node:stream';
import type { Logger } from 'pino';
import type { BackoffOptions } from '../common/backoff.js';
import { systemClock, systemTimers, type Clock, type Timers } from '../common/clock.js';
import {
  NATIVE_READER_CAPABILITIES,
  type ReaderCapabilities,
} from '../protocol/reader-capabilities.js';
import type { AgentConfig } from './config.js';
import type { MachineSettings } from '../protocol/transaction-rules/state-machine.js';
import { Executor } from './executor.js';
import type { LocalApi } from './local-api/server.js';
import { DEFAULT_LOCAL_SETTINGS, type LocalEngine } from './local/engine.js';
import { LocalMode, type FixedLocalApi, type LocalTlsTuning } from './local/local-mode.js';
import { Heartbeat } from './heartbeat.js';
import { Journal, type JournalDurability } from './journal.js';
import { AgentLink } from './link.js';
import type { PrinterPort, ReaderPort } from './ports.js';
import type { TerminalTransactionState } from '../protocol/terminal-status.js';
import type { UpdateOrderMessage } from '../protocol/update.js';
import { partLogger } from '../common/logging.js';
import { printable } from '../common/terminal-text.js';
import type { FactsMessage } from '../protocol/fleet-diagnostics.js';
import { FleetConfigApplier, type RefusedConfig } from './fleet-config.js';
import type { LocalApiSettings } from '../protocol/local-api.js';
import { VerifierAuthenticator, type LocalApiAuthenticator } from './local-api/authenticator.js';
import { LocalCredentials } from './local-api/credentials.js';
import { answerDiagnostic } from './fleet-diagnostics.js';
import type { LogRing } from './fleet-logs.js';
import type { LineTrace } from './fleet-trace.js';
import { EndOfDayScheduler, ZVT_DEFAULT_END_OF_DAY } from './end-of-day.js';
import type { ZvtSettlement } from '../firmware-bridge/zvt/reader/settlement.js';
import type { LocalTlsIdentity } from './local-api/tls-identity.js';

export const AGENT_VERSION = VERSION;

/** Final transactions and commands are forgotten after this long. */
const JOURNAL_RETENTION_MS = 30 * 86_400_000;

export interface AgentDeps {
  reader: ReaderPort;
  /**
   * The local API's TLS identity: where the terminal is and how often to look (default: its
   * interfaces, hourly). It asks the relay for a certificate while the fleet's `local_api`
   * is enabled, or always with `enabled: true`.
   */
  localTls?: LocalTlsTuning;
  /** What the reader can do, told to the relay with the presence (default: the native reader's). */
  readerCapabilities?: ReaderCapabilities;
  printer?: PrinterPort;
  logger: Logger;
  clock?: Clock;
  timers?: Timers;
  /**
   * The byte stream to the broker instead of a connection to `broker.url`: the relay's
   * hosted simulators join its embedded broker inside the process.
   */
  openBrokerStream?: () => Duplex;
  /** The release version told to the relay (default: this package's version). */
  agentVersion?: string;
  /** Update orders from the relay (agent/updater.ts); without it the agent takes none. */
  onUpdateOrder?: (order: UpdateOrderMessage) => void;
  /** The fleet's configuration and diagnostics (docs/fleet.md): what the process gives them. */
  fleet?: AgentFleetDeps;
  /**
   * What each journal commit outlives: a power loss (the default, and the only choice of
   * `tps agent`), or only a crash of the process, for the relay's hosted simulators.
   */
  journalDurability?: JournalDurability;
  /** The terminal's end-of-day (hardware.ts; docs/zvt.md, "End-of-day"). */
  endOfDay?: AgentEndOfDayDeps;
  /**
   * Local mode (docs/local-mode.md) given in code, for tests, benches and simulators: the
   * engine runs from start, and with `api` that API listens from start to stop, whatever
   * the fleet's `local_api` says. Without it the fleet's setting decides (agent/local/local-mode.ts).
   */
  localMode?: {
    settings?: Partial<MachineSettings>;
    api?: FixedLocalApi;
    /** Local reports unacknowledged this long with the link up: the relay counts as out of reach (default 30 s). */
    unacknowledgedMs?: number;
  };
  /** Knobs for tests and benches; the defaults suit the field. */
  tuning?: {
    /** Broker reconnect back-off (default 500 ms doubling to 60 s, jittered). */
    reconnect?: Partial<BackoffOptions>;
    /** Reader retry back-off (default 500 ms doubling to 30 s). */
    readerRetry?: Partial<BackoffOptions>;
    /** Watchdog on a running transaction (default 15 s). */
    watchMs?: number;
    connectTimeoutMs?: number;
    /** Outbox re-published after this long without a report-ack (default 10 s). */
    reportResendMs?: number;
    /** Back-off between tries to listen on the local API's port when it is taken (default 1 s to 60 s). */
    localListenRetry?: Partial<BackoffOptions>;
  };
}

export interface AgentEndOfDayDeps {
  /** Runs it on the terminal; absent: the reader has none (each request is reported FAILED). */
  run?: () => Promise<ZvtSettlement>;
  /** Registers for the terminal saying it needs one (ZVT status F0). */
  onRequired?: (listener: () => void) => void;
  /** Its own clock and timers (default: the agent's), so a test can move the day alone. */
  clock?: Clock;
  timers?: Timers;
  /** Back-off between tries of a failed one (default 60 s doubling to 1 h). */
  retry?: Partial<BackoffOptions>;
}

export interface AgentFleetDeps {
  /** The agent's own file, under the fleet's configuration (default: the config started with). */
  base?: AgentConfig;
  /** Reopens the hardware with the kept configuration; without it such settings are refused. */
  restart?: () => void;
  /** Sets the level of every logger of the process (default: the given logger's alone). */
  setLogLevel?: (level: AgentConfig['log_level']) => void;
  /** The reader's model and firmware where the agent knows them, for the fleet's facts. */
  reader?: { model?: string; firmware?: string };
  /** Reader settings the reader refused since the process started: reported, not tried again. */
  refused?: RefusedConfig;
  logs?: LogRing;
  trace?: LineTrace;
}

export interface RunningAgent {
  /** Stops taking commands, says `connected: false`, closes the journal. Leaves reader and printer open. */
  stop(): Promise<void>;
  /** For tests and doctor-like tools. */
  readonly journal: Journal;
  readonly link: AgentLink;
  /** READY when no payment is under way (an update waits for it). */
  readonly transactionState: TerminalTransactionState;
  /** The reader told more about itself (a ZVT terminal's software version): say it again. */
  readerFacts(reader: { model?: string; firmware?: string }): void;
  /** The end-of-day schedule and requests (end-of-day.ts). */
  readonly endOfDay: EndOfDayScheduler;
  /** Local mode (docs/local-mode.md): what a server of the local API starts, stops and checks with. */
  readonly localApi: {
    /** The settings in force, from the fleet configuration. */
    readonly settings: LocalApiSettings;
    /** Hears each change of the settings in force; answers an unsubscribe. */
    onChange(listener: (settings: LocalApiSettings) => void): () => void;
    readonly authenticator: LocalApiAuthenticator;
  };
  /** The local API's TLS identity while it runs. */
  readonly localTls: LocalTlsIdentity | undefined;
  /** Local mode's engine while it runs, and its API while it listens. */
  readonly local: { engine: LocalEngine; api?: LocalApi } | undefined;
  /** Whether the agent counts the relay as in reach (docs/local-mode.md, row 18). */
  relayReachable(): boolean;
}

export async function startAgent(config: AgentConfig, deps: AgentDeps): Promise<RunningAgent> {
  const clock = deps.clock ?? systemClock;
  const timers = deps.timers ?? systemTimers;
  const { logger, reader, printer, tuning = {} } = deps;
  const journal = Journal.open(config.data_dir, () => clock.now(), deps.journalDurability);
  journal.prune(new Date(clock.now().getTime() - JOURNAL_RETENTION_MS));
  logger.info({ dataDir: config.data_dir, lastSeq: journal.lastSeq() }, 'journal open');

  // The link is created last; until then there is nothing to publish to.
  const wired: { link?: AgentLink } = {};
  const flush = () => wired.link?.flush();
  const wiredEndOfDay: { scheduler?: EndOfDayScheduler } = {};
  const executor = new Executor({
    onEndOfDay: () => wiredEndOfDay.scheduler?.request('ON_DEMAND'),
    journal,
    reader,
    ...(printer ? { printer } : {}),
    clock,
    timers,
    logger: partLogger(logger, 'executor'),
    ack: (commandId, outcome) => wired.link?.ackCommand(commandId, outcome),
    reported: flush,
    ...(tuning.watchMs !== undefined ? { watchMs: tuning.watchMs } : {}),
    ...(tuning.readerRetry ? { retry: tuning.readerRetry } : {}),
  });
  const heartbeat = new Heartbeat({
    journal,
    reader,
    clock,
    timers,
    logger: partLogger(logger, 'heartbeat'),
    periodMs: config.heartbeat_s * 1000,
    reported: flush,
  });
  let idleText: string | undefined;
  const showIdleText = () => {
    if (idleText !== undefined && executor.transactionState === 'READY') {
      heartbeat.update({ screen_message: idleText });
    }
  };
  executor.on('state', (state) => {
    heartbeat.update({ transaction_state: state });
    showIdleText();
  });
  heartbeat.update({ connected: false, transaction_state: executor.transactionState });

  const endOfDayDeps = deps.endOfDay ?? {};
  const endOfDay = new EndOfDayScheduler({
    ...(endOfDayDeps.run ? { run: endOfDayDeps.run } : {}),
    gate: {
      claim: () => executor.claimEndOfDay(),
      release: () => executor.releaseEndOfDay(),
      onChange: (listener) => {
        executor.on('state', listener);
        return () => executor.off('state', listener);
      },
    },
    report: (settlement) => {
      journal.record({ reports: [{ type: 'settlement', settlement }] });
      flush();
    },
    defaultAt: config.reader.protocol === 'zvt' ? ZVT_DEFAULT_END_OF_DAY : 'off',
    dataDir: config.data_dir,
    clock: endOfDayDeps.clock ?? clock,
    timers: endOfDayDeps.timers ?? timers,
    logger: partLogger(logger, 'end-of-day'),
    ...(endOfDayDeps.retry ? { retry: endOfDayDeps.retry } : {}),
  });
  wiredEndOfDay.scheduler = endOfDay;
  endOfDay.configure(undefined);
  endOfDayDeps.onRequired?.(() => endOfDay.request('TERMINAL_REQUIRED'));

  const fleet = deps.fleet ?? {};
  let readerFacts = fleet.reader;
  const applier = new FleetConfigApplier({
    base: fleet.base ?? config,
    running: config,
    live: {
      heartbeatMs: (ms) => heartbeat.setPeriod(ms),
      logLevel: fleet.setLogLevel ?? ((level) => (logger.level = level)),
      idleScreenText: (text) => {
        idleText = text;
        showIdleText();
      },
      endOfDay: (schedule) => endOfDay.configure(schedule),
    },
    isIdle: () => executor.transactionState === 'READY',
    onIdle: (listener) => {
      executor.on('state', listener);
      return () => executor.off('state', listener);
    },
    ...(fleet.restart ? { restart: fleet.restart } : {}),
    ...(fleet.refused ? { refused: fleet.refused } : {}),
    report: (message) => wired.link?.publishFleet('configReport', message, true),
    clock,
    logger: partLogger(logger, 'config'),
  });

  const localCredentials = LocalCredentials.open(config.data_dir, partLogger(logger, 'local-api'));
  const localAuthenticator = new VerifierAuthenticator(localCredentials);

  // Before recovery: an outcome the reader gives it moves a local record in its commit.
  const localMode = new LocalMode({
    terminalId: config.terminal_id,
    dataDir: config.data_dir,
    journal,
    executor,
    machine: { ...DEFAULT_LOCAL_SETTINGS, ...deps.localMode?.settings },
    settings: { current: () => applier.localApi, onChange: (l) => applier.onLocalApi(l) },
    authenticator: localAuthenticator,
    readings: heartbeat,
    linkConnected: () => wired.link?.connected ?? false,
    sendCertRequest: (request) => wired.link?.publishLocalCertRequest(request) ?? false,
    ...(deps.localMode ? { fixed: deps.localMode.api ? { api: deps.localMode.api } : {} } : {}),
    ...(deps.localTls ? { tls: deps.localTls } : {}),
    ...(deps.localMode?.unacknowledgedMs !== undefined
      ? { unacknowledgedMs: deps.localMode.unacknowledgedMs }
      : {}),
    ...(tuning.localListenRetry ? { listenRetry: tuning.localListenRetry } : {}),
    clock,
    timers,
    logger: partLogger(logger, 'local'),
    reported: flush,
  });
  // Open transactions are read before the link can bring a command.
  const recovery = executor.recover();
  const link = new AgentLink({
    terminalId: config.terminal_id,
    broker: config.broker,
    journal,
    onCommand: (message) => executor.handle(message),
    onConnectionChange: (connected) => {
      heartbeat.update({ connected });
      localMode.linkChanged(connected);
    },
    logger: partLogger(logger, 'link'),
    clock,
    timers,
    agentVersion: deps.agentVersion ?? AGENT_VERSION,
    ...(deps.onUpdateOrder ? { onUpdateOrder: deps.onUpdateOrder } : {}),
    ...(deps.openBrokerStream ? { openStream: deps.openBrokerStream } : {}),
    readerCapabilities: deps.readerCapabilities ?? NATIVE_READER_CAPABILITIES,
    ...(tuning.reconnect ? { backoff: tuning.reconnect } : {}),
    ...(tuning.connectTimeoutMs !== undefined ? { connectTimeoutMs: tuning.connectTimeoutMs } : {}),
    ...(tuning.reportResendMs !== undefined ? { resendMs: tuning.reportResendMs } : {}),
    fleet: {
      config: (value) => applier.received(value),
      localCredentials: (value) => void localCredentials.received(value),
      diagnostic: (value) =>
        void answerDiagnostic(value, {
          config,
          clock,
          reader,
          brokerConnected: () => link.connected,
          configState: () => applier.describe(),
          ...(fleet.logs ? { logs: fleet.logs } : {}),
          ...(fleet.trace ? { trace: fleet.trace } : {}),
          logger: partLogger(logger, 'diagnostics'),
        }).then((reply) => reply && link.publishFleet('diagnosticReply', reply, false)),
      connected: () => {
        publishFacts();
        applier.repeat();
      },
    },
    localTls: {
      answer: (value) => localMode.certificateAnswer(value),
      // linkChanged(true) asks again for a certificate that could not leave.
      connected: () => undefined,
    },
  });
  wired.link = link;
  function publishFacts(): void {
    // What the reader says of itself is shown on operators' terminals: its control
    // characters travel as escapes (common/terminal-text.ts).
    const shown = (text: string) => printable(text).slice(0, 64);
    const { model, firmware } = readerFacts ?? {};
    const facts: FactsMessage = {
      agent_version: AGENT_VERSION,
      node_version: process.versions.node,
      reader: {
        protocol: (deps.readerCapabilities ?? NATIVE_READER_CAPABILITIES).protocol,
        ...(model === undefined ? {} : { model: shown(model) }),
        ...(firmware === undefined ? {} : { firmware: shown(firmware) }),
      },
      at: clock.now().toISOString(),
    };
    link.publishFleet('facts', facts, true);
  }
  link.start();
  heartbeat.start();
  recovery.catch((error: unknown) => logger.error({ err: error }, 'recovery failed'));
  await localMode.start();
  let stopping: Promise<void> | undefined;
  return {
    journal,
    link,
    endOfDay,
    get localTls() {
      return localMode.tls;
    },
    get local() {
      const { engine, api } = localMode;
      return engine && { engine, ...(api ? { api } : {}) };
    },
    relayReachable: () => localMode.relayReachable(),
    get transactionState() {
      return executor.transactionState;
    },
    localApi: {
      get settings() {
        return applier.localApi;
      },
      onChange: (listener) => applier.onLocalApi(listener),
      authenticator: localAuthenticator,
    },
    readerFacts: (reader) => {
      readerFacts = reader;
      if (link.connected) publishFacts();
    },
    stop: () =>
      (stopping ??= (async () => {
        endOfDay.stop();
        applier.stop();
        heartbeat.stop();
        await localMode.stop();
        await executor.stop();
        await link.stop();
        journal.close();
        logger.info('agent stopped');
      })()),
  };
}
