/**
 * The agent's updater (docs/fleet.md, "The updater"). An order names a release; the
 * updater downloads it, checks it and installs it beside the running one while payments
 * go on; then, with no payment under way and inside the maintenance window, records the
 * switch, points `current` at the new release and has the agent restart. The new release
 * starts on trial (update-boot.ts): healthy within the deadline, it is confirmed;
 * otherwise `current` goes back and the agent restarts on the release before.
 *
 *   order ─▶ download ─▶ unpack, verify ─▶ releases/<v> ─▶ wait: no payment, window
 *         ─▶ state "switching" ─▶ current → <v> ─▶ state "trial" ─▶ exit (restart)
 *   start ─▶ trial: broker, journal, reader within the deadline ─▶ idle, "installed"
 *                   else: state "rolling_back" ─▶ current → before ─▶ exit (restart)
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import type { Clock, Timers } from '../common/clock.js';
import { sleep } from '../common/clock.js';
import { printable } from '../common/terminal-text.js';
import type { UpdateOrderMessage, UpdateOutcome, UpdateStatusMessage } from '../protocol/index.js';
import type { UpdateConfig } from './config.js';
import { rollBack, type Trial } from './update-boot.js';
import { downloadRelease } from './update-download.js';
import {
  ReleaseProblem,
  clearIncoming,
  incomingDir,
  installRelease,
  pruneReleases,
  releaseDir,
  switchCurrent,
  thisArch,
} from './update-release.js';
import { readUpdateState, stepReached, writeUpdateState } from './update-state.js';

/** How often the trial checks health, and how often a staged update looks for its moment. */
const HEALTH_POLL_MS = 1000;
const WAIT_POLL_MS = 1000;

export interface UpdaterOptions {
  config: UpdateConfig | undefined;
  /** The release running now (undefined: not started from a release folder). */
  running: string | undefined;
  trial?: Trial;
  credential?: { username: string; password: string };
  /** The checks that fail now, by name; empty when healthy. */
  health: () => Promise<string[]>;
  /** True while no payment is under way. */
  idle: () => boolean;
  /**
   * Local transactions whose reports the relay has not acknowledged (docs/local-mode.md,
   * row 19): the switch waits for them as for a payment, so a release that fails its
   * trial cannot take them along.
   */
  unforwarded?: () => number;
  /**
   * The maintenance window the fleet's configuration gives (docs/fleet.md,
   * "Configuration"), which takes the place of the agent file's `update.maintenance_window`.
   */
  fleetWindow?: () => UpdateConfig['maintenance_window'];
  publish: (status: UpdateStatusMessage) => void;
  /** Stops the agent and exits for the supervisor to start `current`; never returns. */
  restart: (reason: string) => Promise<void>;
  logger: Logger;
  clock: Clock;
  timers: Timers;
}

export class Updater {
  private pending: UpdateOrderMessage | undefined;
  private busy = false;
  private stopped = false;
  private readonly stop = new AbortController();
  private phase: UpdateStatusMessage['phase'] = 'idle';
  private working: UpdateOrderMessage | undefined;
  /** The last outcome, also when it could not be recorded in the state file. */
  private lastInMemory: UpdateOutcome | undefined;

  constructor(private readonly options: UpdaterOptions) {}

  /** Publishes the status and, on a trial, watches health until confirmed or rolled back. */
  start(): void {
    const { trial } = this.options;
    if (trial) {
      this.phase = 'trial';
      this.working = { order_id: trial.order_id, version: trial.to };
      this.guard(this.watchTrial(trial));
    }
    this.report();
  }

  close(): void {
    this.stopped = true;
    this.stop.abort();
  }

  /** An order from the relay (retained: it comes again at every connect). */
  order(order: UpdateOrderMessage): void {
    this.pending = order;
    this.guard(this.next());
  }

  private async next(): Promise<void> {
    const order = this.pending;
    if (!order || this.busy || this.stopped || this.phase === 'trial') return;
    const { config, running, logger } = this.options;
    const done = this.lastOutcome()?.order_id === order.order_id;
    if (order.version === running) {
      if (!done) {
        this.finish({ order_id: order.order_id, version: order.version, result: 'installed' });
      }
      return this.report();
    }
    // Done with this order already (refused, failed, rolled back): a new order id tries again.
    if (done) return this.report();
    const arch = thisArch();
    const refusal = !config
      ? 'updates are not configured on this terminal (the update section of its config)'
      : !running
        ? 'the agent does not run from a release folder (update.root/current)'
        : !arch
          ? `no release is built for ${process.platform}-${process.arch}`
          : undefined;
    if (refusal || !config || !running || !arch) {
      this.finish({
        order_id: order.order_id,
        version: order.version,
        result: 'refused',
        reason: refusal,
      });
      return;
    }
    this.busy = true;
    this.working = order;
    try {
      await this.install(order, config, running, arch);
    } catch (error) {
      clearIncoming(config.root);
      if (!(error instanceof Superseded)) {
        const problem =
          error instanceof ReleaseProblem
            ? error
            : new ReleaseProblem('failed', (error as Error).message);
        logger.warn({ version: order.version, reason: problem.message }, 'update not installed');
        fs.rmSync(releaseDir(config.root, order.version), { recursive: true, force: true });
        this.finish({
          order_id: order.order_id,
          version: order.version,
          result: problem.result,
          reason: problem.message,
        });
      }
    } finally {
      this.busy = false;
      this.working = undefined;
      this.phase = 'idle';
    }
    if (this.pending !== order) this.guard(this.next());
  }

  private async install(
    order: UpdateOrderMessage,
    config: UpdateConfig,
    running: string,
    arch: NonNullable<ReturnType<typeof thisArch>>,
  ): Promise<void> {
    const { logger } = this.options;
    const { root } = config;
    logger.info({ from: running, to: order.version }, 'update: downloading');
    this.setPhase('downloading');
    const archive = path.join(incomingDir(root), `${order.version}.tar.gz`);
    await downloadRelease({
      relay: config.relay,
      version: order.version,
      arch,
      ...(this.options.credential ? { credential: this.options.credential } : {}),
      file: archive,
    });
    stepReached('downloaded');
    this.setPhase('verifying');
    await installRelease({
      root,
      archive,
      version: order.version,
      arch,
      publicKeyPem: fs.readFileSync(config.public_key, 'utf8'),
      step: stepReached,
    });
    fs.rmSync(archive, { force: true });
    this.setPhase('waiting');
    await this.waitForTheMoment(order, config);
    // Checked and recorded in one turn of the event loop: no payment starts in between.
    logger.info({ from: running, to: order.version }, 'update: switching');
    this.setPhase('switching');
    const move = { order_id: order.order_id, from: running, to: order.version };
    writeUpdateState(root, { phase: 'switching', ...move });
    stepReached('switching');
    switchCurrent(root, order.version);
    stepReached('switched');
    writeUpdateState(root, { phase: 'trial', ...move, boots: 0 });
    await this.options.restart(`update from ${running} to ${order.version}`);
  }

  /** Until no payment is under way and the clock is inside the maintenance window. */
  private async waitForTheMoment(order: UpdateOrderMessage, config: UpdateConfig): Promise<void> {
    for (;;) {
      // Stopping, or a newer order came: this one is dropped, the newer one runs next.
      if (this.stopped || this.pending !== order) throw new Superseded();
      const now = this.options.clock.now();
      const window = this.options.fleetWindow?.() ?? config.maintenance_window;
      const unforwarded = this.options.unforwarded?.() ?? 0;
      if (this.options.idle() && unforwarded === 0 && inWindow(window, now)) return;
      // Said once each way: the phase tells the relay (the rollout's view of the terminal).
      if (unforwarded > 0 && this.phase !== 'waiting_to_forward') {
        this.options.logger.info(
          { unforwarded, to: order.version },
          'update: waits until the local transactions are forwarded to the relay',
        );
        this.setPhase('waiting_to_forward');
      } else if (unforwarded === 0 && this.phase === 'waiting_to_forward') {
        this.setPhase('waiting');
      }
      await sleep(WAIT_POLL_MS, this.stop.signal, this.options.timers);
    }
  }

  private async watchTrial(trial: Trial): Promise<void> {
    const { config, logger, clock } = this.options;
    if (!config) return;
    const deadline = clock.now().getTime() + config.health_deadline_s * 1000;
    let failing: string[] = ['not checked yet'];
    while (!this.stopped) {
      failing = await this.options.health().catch((error: unknown) => [String(error)]);
      if (failing.length === 0) break;
      if (clock.now().getTime() >= deadline) break;
      await sleep(HEALTH_POLL_MS, this.stop.signal, this.options.timers);
    }
    if (this.stopped) return;
    if (failing.length === 0) {
      stepReached('healthy');
      logger.info({ version: trial.to }, 'update: healthy, confirmed');
      this.finish({ order_id: trial.order_id, version: trial.to, result: 'installed' });
      pruneReleases(config.root, [trial.to, trial.from]);
      this.guard(this.next());
      return;
    }
    const reason = `not healthy within ${config.health_deadline_s} s: ${failing.join('; ')}`;
    logger.error({ version: trial.to, back_to: trial.from, reason }, 'update: rolling back');
    this.setPhase('rolling_back');
    const { order_id, from, to } = trial;
    const rolling = { phase: 'rolling_back' as const, order_id, from, to, reason };
    writeUpdateState(config.root, rolling);
    rollBack(config.root, rolling, () => clock.now());
    await this.options.restart(`rolled back from ${trial.to}: ${reason}`);
  }

  /** A failure of the updater is logged, never left to crash the agent. */
  private guard(work: Promise<void>): void {
    work.catch((error: unknown) => this.options.logger.error({ err: error }, 'update failed'));
  }

  /** Records how an order ended; the updater is idle again. */
  private finish(outcome: Omit<UpdateOutcome, 'at'>): void {
    const { config } = this.options;
    this.phase = 'idle';
    this.working = undefined;
    const last = {
      ...outcome,
      ...(outcome.reason === undefined ? {} : { reason: printable(outcome.reason).slice(0, 500) }),
      at: this.options.clock.now().toISOString(),
    };
    this.lastInMemory = last;
    if (config) {
      try {
        writeUpdateState(config.root, { phase: 'idle', last });
      } catch (error) {
        // A root that is missing or read-only: the outcome is still reported.
        this.options.logger.error({ err: error }, 'update: cannot record the outcome');
      }
    }
    this.report();
  }

  private setPhase(phase: UpdateStatusMessage['phase']): void {
    this.phase = phase;
    this.report();
  }

  /** How the last order ended, from the state file (idle), else as kept in memory. */
  private lastOutcome(): UpdateOutcome | undefined {
    const { config } = this.options;
    const state = config ? readUpdateState(config.root) : undefined;
    return (state?.phase === 'idle' ? state.last : undefined) ?? this.lastInMemory;
  }

  private report(): void {
    const { running } = this.options;
    const last = this.lastOutcome();
    this.options.publish({
      ...(running ? { running_version: running } : {}),
      phase: this.phase,
      ...(this.working && this.phase !== 'idle'
        ? { order_id: this.working.order_id, target_version: this.working.version }
        : {}),
      ...(last ? { last } : {}),
      at: this.options.clock.now().toISOString(),
    });
  }
}

/** A staged update given up while it waited: the agent stops, or a newer order came. */
class Superseded extends Error {}

/** Whether `at` (UTC) is inside the window; no window is any time. */
export function inWindow(window: UpdateConfig['maintenance_window'], at: Date): boolean {
  if (!window) return true;
  const minutes = (hhmm: string) => Number(hhmm.slice(0, 2)) * 60 + Number(hhmm.slice(3, 5));
  const now = at.getUTCHours() * 60 + at.getUTCMinutes();
  const start = minutes(window.start);
  const end = minutes(window.end);
  return start <= end ? now >= start && now < end : now >= start || now < end;
}
