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
import { Executor } from './executor.js';
import { Heartbeat } from './heartbeat.js';
import { Journal, type JournalDurability } from './journal.js';
import { AgentLink } from './link.js';
import type { PrinterPort, ReaderPort } from './ports.js';
import { partLogger } from '../common/logging.js';

export const AGENT_VERSION = VERSION;

/** Final transactions and commands are forgotten after this long. */
const JOURNAL_RETENTION_MS = 30 * 86_400_000;

export interface AgentDeps {
  reader: ReaderPort;
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
  /**
   * What each journal commit outlives: a power loss (the default, and the only choice of
   * `tps agent`), or only a crash of the process, for the relay's hosted simulators.
   */
  journalDurability?: JournalDurability;
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
  };
}

export interface RunningAgent {
  /** Stops taking commands, says `connected: false`, closes the journal. Leaves reader and printer open. */
  stop(): Promise<void>;
  /** For tests and doctor-like tools. */
  readonly journal: Journal;
  readonly link: AgentLink;
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
  const executor = new Executor({
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
  executor.on('state', (state) => heartbeat.update({ transaction_state: state }));
  heartbeat.update({ connected: false, transaction_state: executor.transactionState });

  // Open transactions are read before the link can bring a command.
  const recovery = executor.recover();
  const link = new AgentLink({
    terminalId: config.terminal_id,
    broker: config.broker,
    journal,
    onCommand: (message) => executor.handle(message),
    onConnectionChange: (connected) => heartbeat.update({ connected }),
    logger: partLogger(logger, 'link'),
    clock,
    timers,
    agentVersion: AGENT_VERSION,
    ...(deps.openBrokerStream ? { openStream: deps.openBrokerStream } : {}),
    readerCapabilities: deps.readerCapabilities ?? NATIVE_READER_CAPABILITIES,
    ...(tuning.reconnect ? { backoff: tuning.reconnect } : {}),
    ...(tuning.connectTimeoutMs !== undefined ? { connectTimeoutMs: tuning.connectTimeoutMs } : {}),
    ...(tuning.reportResendMs !== undefined ? { resendMs: tuning.reportResendMs } : {}),
  });
  wired.link = link;
  link.start();
  heartbeat.start();
  recovery.catch((error: unknown) => logger.error({ err: error }, 'recovery failed'));

  let stopping: Promise<void> | undefined;
  return {
    journal,
    link,
    stop: () =>
      (stopping ??= (async () => {
        heartbeat.stop();
        await executor.stop();
        await link.stop();
        journal.close();
        logger.info('agent stopped');
      })()),
  };
}
