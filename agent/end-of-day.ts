/**
 * End-of-day on the agent's side (docs/zvt.md, "End-of-day"): when, and what is reported.
 *
 * - Why: the fleet configuration's daily time in the terminal's time zone (`end_of_day`,
 *   default 03:00 for a ZVT terminal, off for the native reader), a request from the relay
 *   (`terminal.end_of_day`), or the terminal saying it needs one (ZVT status F0).
 * - Never during a payment: it takes the reader only when nothing runs on it
 *   (reader-slot.ts). A payment that runs is waited for; a payment that arrives meanwhile
 *   waits for the end-of-day, which is short and which a terminal that asked for it needs
 *   before it pays anyway.
 * - Every end-of-day, done or failed, is a settlement report in the journal's outbox (one
 *   commit), so it reaches the relay across restarts. A failed one is tried again after
 *   the common back-off (default 1 min doubling to 1 h), with the terminal's reason in the
 *   report and when the next try comes.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { z } from 'zod';
import { Backoff, type BackoffOptions } from '../common/backoff.js';
import type { Clock, Timers } from '../common/clock.js';
import type { EndOfDaySchedule } from '../protocol/fleet-config.js';
import { noEndOfDay, Settlement, type SettlementTrigger } from '../protocol/settlement.js';
import type { ZvtSettlement } from '../firmware-bridge/zvt/reader/settlement.js';
import { nextLocalTime } from './end-of-day-time.js';
import { errorInfo } from './reports.js';

/** The daily time of a ZVT terminal's end-of-day when the fleet sets none. */
export const ZVT_DEFAULT_END_OF_DAY = '03:00';
export const END_OF_DAY_FILE = 'end-of-day.json';

/** The reader, as the end-of-day needs it (reader-slot.ts). */
export interface EndOfDayGate {
  /** Takes the reader when nothing runs on it; false (and no payment starts first) otherwise. */
  claim(): boolean;
  release(): void;
  /** Calls `listener` when the terminal's transaction state changes; answers a remover. */
  onChange(listener: () => void): () => void;
}

export interface EndOfDayOptions {
  /** Runs the terminal's end-of-day; absent when the reader has none (native). */
  run?: () => Promise<ZvtSettlement>;
  gate: EndOfDayGate;
  /** Journals the report in the outbox (one commit) and has it sent. */
  report: (settlement: Settlement) => void;
  /** The schedule's time when the fleet sets none: `HH:MM`, or `off`. */
  defaultAt: string;
  /** Where the last successful end-of-day's time is kept (the next one's period start). */
  dataDir: string;
  clock: Clock;
  timers: Timers;
  logger: Logger;
  /** Back-off between tries of a failed end-of-day (default 60 s doubling to 1 h). */
  retry?: Partial<BackoffOptions>;
}

const Kept = z.object({ last_success: z.string() });

export class EndOfDayScheduler {
  /** `timeZone` undefined: the host's. */
  private schedule: { at: string; timeZone: string | undefined } | undefined;
  private scheduleTimer: unknown;
  private retryTimer: unknown;
  private pending: { trigger: SettlementTrigger; attempt: number } | undefined;
  private running = false;
  private stopped = false;
  private unwatch: (() => void) | undefined;
  private readonly backoff: Backoff;
  private lastSuccess: string | undefined;

  constructor(private readonly options: EndOfDayOptions) {
    this.backoff = new Backoff({ initialMs: 60_000, maxMs: 3_600_000, ...options.retry });
    this.lastSuccess = this.readKept();
  }

  /** The fleet's `end_of_day` (undefined: the defaults); re-arms the daily timer. */
  configure(schedule: EndOfDaySchedule | undefined): void {
    const at = schedule?.at ?? this.options.defaultAt;
    const next = at === 'off' ? undefined : { at, timeZone: schedule?.time_zone };
    if (JSON.stringify(next) === JSON.stringify(this.schedule) && this.scheduleTimer) return;
    this.schedule = next;
    this.arm();
  }

  /** The next scheduled run, for the doctor and tests; undefined when off. */
  get nextRun(): Date | undefined {
    const { schedule } = this;
    return schedule && nextLocalTime(this.options.clock.now(), schedule.at, schedule.timeZone);
  }

  /** Runs an end-of-day as soon as the reader is free (a request, or the terminal's F0). */
  request(trigger: SettlementTrigger): void {
    if (this.stopped) return;
    if (this.pending && trigger !== 'ON_DEMAND') return void this.tryRun();
    if (this.pending && this.retryTimer !== undefined) {
      // Asked for now: the back-off of an earlier failure does not hold it up.
      this.options.timers.clearTimeout(this.retryTimer);
      this.retryTimer = undefined;
    }
    this.pending = { trigger, attempt: this.pending?.attempt ?? 1 };
    this.tryRun();
  }

  stop(): void {
    this.stopped = true;
    this.options.timers.clearTimeout(this.scheduleTimer);
    this.options.timers.clearTimeout(this.retryTimer);
    this.unwatch?.();
    this.unwatch = undefined;
  }

  private arm(): void {
    const { timers, clock } = this.options;
    timers.clearTimeout(this.scheduleTimer);
    this.scheduleTimer = undefined;
    const at = this.nextRun;
    if (!at || this.stopped) return;
    // Long waits are cut into hours so that a moved clock (or a suspended host) is noticed.
    const wait = Math.min(at.getTime() - clock.now().getTime(), 3_600_000);
    this.scheduleTimer = timers.setTimeout(
      () => {
        this.scheduleTimer = undefined;
        if (clock.now().getTime() >= at.getTime()) this.request('SCHEDULE');
        this.arm();
      },
      Math.max(0, wait),
      { unref: true },
    );
  }

  private tryRun(): void {
    const pending = this.pending;
    if (this.stopped || this.running || !pending || this.retryTimer !== undefined) return;
    const { run, gate } = this.options;
    if (!run) {
      this.pending = undefined;
      return this.options.report(noEndOfDay(pending.trigger, this.now()));
    }
    if (!gate.claim()) {
      this.unwatch ??= gate.onChange(() => this.tryRun());
      return;
    }
    this.unwatch?.();
    this.unwatch = undefined;
    this.running = true;
    void this.runOnce(run, pending);
  }

  private async runOnce(
    run: () => Promise<ZvtSettlement>,
    pending: { trigger: SettlementTrigger; attempt: number },
  ): Promise<void> {
    const startedAt = this.now();
    this.options.logger.info(
      { trigger: pending.trigger, attempt: pending.attempt },
      'end-of-day starts',
    );
    let outcome: ZvtSettlement;
    try {
      outcome = await run();
    } catch (error) {
      const info = errorInfo(error);
      outcome = {
        status: 'FAILED',
        result_code: 'READER_UNAVAILABLE',
        result_description: asDescription(
          `The terminal did not answer the end-of-day: ${info.message}`,
        ),
      };
    } finally {
      this.running = false;
      this.options.gate.release();
    }
    const settlement = this.checked({
      ...outcome,
      trigger: pending.trigger,
      attempt: pending.attempt,
      started_at: startedAt,
      finished_at: this.now(),
      ...(this.lastSuccess ? { period_start: this.lastSuccess } : {}),
    });
    if (this.stopped) return;
    if (settlement.status === 'SUCCESS') {
      this.backoff.reset();
      this.pending = undefined;
      this.lastSuccess = settlement.finished_at;
      this.keep(settlement.finished_at);
      this.options.logger.info({ trigger: pending.trigger }, 'end-of-day done');
      this.options.report(settlement);
      return;
    }
    const delayMs = this.backoff.next();
    const retryAt = new Date(this.options.clock.now().getTime() + delayMs).toISOString();
    this.pending = { trigger: pending.trigger, attempt: pending.attempt + 1 };
    this.options.logger.warn(
      { reason: settlement.result_description, retryAt },
      'end-of-day failed: tried again later',
    );
    this.options.report({ ...settlement, retry_at: retryAt });
    this.retryTimer = this.options.timers.setTimeout(
      () => {
        this.retryTimer = undefined;
        this.tryRun();
      },
      delayMs,
      { unref: true },
    );
  }

  /**
   * The settlement as the relay takes it: one that does not pass the schema (a field the
   * terminal filled oddly) is reported with its result alone, never not at all, since the
   * relay would refuse the report and every report behind it in the outbox would wait.
   */
  private checked(settlement: Settlement): Settlement {
    const parsed = Settlement.safeParse(settlement);
    if (parsed.success) return parsed.data;
    this.options.logger.warn(
      { problems: parsed.error.issues.map((i) => i.path.join('.')) },
      'end-of-day details left out: not as the schema wants them',
    );
    const { status, trigger, attempt, started_at, finished_at, period_start } = settlement;
    return {
      status,
      trigger,
      attempt,
      started_at,
      finished_at,
      ...(period_start ? { period_start } : {}),
      ...(status === 'FAILED'
        ? { result_code: 'SYSTEM_ERROR', result_description: 'End-of-day failed' }
        : {}),
    };
  }

  private now(): string {
    return this.options.clock.now().toISOString();
  }

  private readKept(): string | undefined {
    try {
      const file = path.join(this.options.dataDir, END_OF_DAY_FILE);
      const parsed = Kept.safeParse(JSON.parse(fs.readFileSync(file, 'utf8')));
      return parsed.success ? parsed.data.last_success : undefined;
    } catch {
      return undefined;
    }
  }

  /** Written whole or not at all; losing it costs only the next report's period start. */
  private keep(lastSuccess: string): void {
    const file = path.join(this.options.dataDir, END_OF_DAY_FILE);
    const temp = `${file}.${process.pid}.tmp`;
    try {
      fs.writeFileSync(temp, JSON.stringify({ last_success: lastSuccess }));
      fs.renameSync(temp, file);
    } catch (error) {
      this.options.logger.warn({ err: errorInfo(error) }, 'cannot keep the end-of-day time');
    }
  }
}

/** As the spec's Description takes it: printable ASCII (others become ?), at most 255 characters. */
function asDescription(text: string): string {
  return text.replace(/[^\x20-\x7e]/g, '?').slice(0, 255);
}
