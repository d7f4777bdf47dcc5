/**
 * The updater in the running agent: at start, a half-done update is finished or undone
 * (update-boot.ts) before anything opens; then orders from the link go to the updater,
 * which checks health (broker, journal, reader) for a trial.
 */
import path from 'node:path';
import type { Logger } from 'pino';
import { systemClock, systemTimers } from '../common/clock.js';
import { withDeadline } from '../common/deadline.js';
import { readKeptConfig } from './fleet-config.js';
import { partLogger } from '../common/logging.js';
import type { UpdateOrderMessage } from '../protocol/index.js';
import type { RunningAgent } from './agent.js';
import type { AgentConfig } from './config.js';
import type { ReaderPort } from './ports.js';
import {
  BOOT_RESOLVED_ENV,
  readResolvedBoot,
  resolveUpdateAtBoot,
  type BootDecision,
} from './update-boot.js';
import { Updater } from './updater.js';

export { RESTART_EXIT_CODE } from './update-boot.js';

const READER_ANSWER_MS = 5000;

export interface PreparedUpdates {
  /** Set when the agent must exit at once for the supervisor to start the release before. */
  restart?: string;
  agentVersion?: string;
  onUpdateOrder: (order: UpdateOrderMessage) => void;
  /**
   * Starts the updater on the running agent. `current` answers the agent and reader of
   * the moment: a fleet configuration may start them again within the process.
   */
  attach(
    current: () => { agent: RunningAgent; reader: ReaderPort },
    restart: (reason: string) => Promise<void>,
  ): Updater;
}

export function prepareUpdates(config: AgentConfig, logger: Logger): PreparedUpdates {
  const log = partLogger(logger, 'updater');
  let decision: BootDecision = { restart: false, running: undefined };
  if (config.update) {
    const { root } = config.update;
    decision =
      process.env[BOOT_RESOLVED_ENV] === path.resolve(root)
        ? readResolvedBoot(root)
        : resolveUpdateAtBoot(root, () => systemClock.now());
  }
  // Orders that come before the agent is wired wait here (the retained one comes at once).
  let early: UpdateOrderMessage | undefined;
  let updater: Updater | undefined;
  const prepared: PreparedUpdates = {
    onUpdateOrder: (order) => (updater ? updater.order(order) : (early = order)),
    attach(current, restart) {
      const { broker } = config;
      updater = new Updater({
        config: config.update,
        running: decision.restart ? undefined : decision.running,
        ...(!decision.restart && decision.trial ? { trial: decision.trial } : {}),
        ...(broker.username !== undefined && broker.password !== undefined
          ? { credential: { username: broker.username, password: broker.password } }
          : {}),
        health: () => {
          const { agent, reader } = current();
          return failingChecks(agent, reader);
        },
        idle: () => current().agent.transactionState === 'READY',
        unforwarded: () => current().agent.journal.localBacklog().count,
        fleetWindow: () => readKeptConfig(config.data_dir)?.config.maintenance_window,
        publish: (status) => current().agent.link.publishUpdateStatus(status),
        restart,
        logger: log,
        clock: systemClock,
        timers: systemTimers,
      });
      updater.start();
      if (early) updater.order(early);
      return updater;
    },
  };
  if (decision.restart) {
    log.warn({ reason: decision.reason }, 'update: restarting on the release before');
    prepared.restart = decision.reason;
  } else if (decision.running) {
    prepared.agentVersion = decision.running;
    if (decision.trial) {
      log.info({ version: decision.running, start: decision.trial.boots }, 'update: on trial');
    }
  }
  return prepared;
}

/** The health a new release must show: broker connected, journal open, reader answers. */
async function failingChecks(agent: RunningAgent, reader: ReaderPort): Promise<string[]> {
  const failing: string[] = [];
  if (!agent.link.connected) failing.push('the broker is not connected');
  try {
    agent.journal.lastSeq();
  } catch (error) {
    failing.push(`the journal is not open: ${(error as Error).message}`);
  }
  try {
    await withDeadline(reader.status(), READER_ANSWER_MS, 'no answer');
  } catch (error) {
    failing.push(`the reader does not answer: ${(error as Error).message}`);
  }
  return failing;
}
