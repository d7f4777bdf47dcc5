/**
 * Status reports: connected, transaction state, screen message, battery, charging,
 * plugged in. One goes out whenever a reading changes: at once for the transaction state,
 * within `coalesceMs` for the rest (a payment's screen text changes several times in a few
 * ms, and each report costs the relay a commit), changes of one tick or window together;
 * and one every period even if nothing changed, the heartbeat that tells the relay
 * the terminal is alive. Each goes through the outbox, where a newer status replaces any
 * older one not yet acknowledged: after an outage the relay gets the current status once.
 */
import type { Logger } from 'pino';
import { FREE_TEXT, maskFreeText } from '../protocol/free-text.js';
import type { StatusReport } from '../protocol/terminal-link.js';
import type { TerminalReadings } from '../protocol/terminal-status.js';
import type { Clock, Timers } from '../common/clock.js';
import type { Journal } from './journal.js';
import type { ReaderPort, ReaderProgress, ReaderReadings } from './ports.js';
import { withoutCardNumbers } from './reports.js';

export interface HeartbeatOptions {
  journal: Pick<Journal, 'recordStatus'>;
  reader: Pick<ReaderPort, 'status' | 'on' | 'off'>;
  clock: Clock;
  timers: Timers;
  logger: Logger;
  periodMs: number;
  /** A status is in the outbox (the link publishes it). */
  reported: () => void;
  /** Changes within this window go out as one report (default 20 ms). */
  coalesceMs?: number;
}

export class Heartbeat {
  private readings: TerminalReadings = {};
  private lastSent = '';
  private pending: unknown;
  /** A transaction state change goes out at the end of this tick. */
  private immediate = false;
  private timer: unknown;
  private stopped = false;
  private periodMs: number;
  private readonly onStatus = (status: ReaderReadings) => this.update(status);
  private readonly onProgress = (progress: ReaderProgress) =>
    this.update({ screen_message: progress.screen_text });

  constructor(private readonly options: HeartbeatOptions) {
    this.periodMs = options.periodMs;
    options.reader.on('status', this.onStatus);
    options.reader.on('progress', this.onProgress);
  }

  /** Starts the period; the first heartbeat asks the reader at once. */
  start(): void {
    void this.beat();
  }

  /**
   * Merges new readings and reports them if anything changed: a new transaction state at
   * once (in this tick), as the POS may ask the terminal's status right after the result;
   * other readings (screen text, battery) within `coalesceMs`, together.
   */
  update(readings: TerminalReadings): void {
    const merged = { ...this.readings, ...defined(readings) };
    if (JSON.stringify(merged) === JSON.stringify(this.readings)) return;
    const stateChanged = merged.transaction_state !== this.readings.transaction_state;
    this.readings = merged;
    if (this.stopped) return;
    if (stateChanged && !this.immediate) {
      this.immediate = true;
      queueMicrotask(() => {
        this.immediate = false;
        this.options.timers.clearTimeout(this.pending);
        this.pending = undefined;
        this.sendIfChanged();
      });
    }
    if (this.pending !== undefined || this.immediate) return;
    this.pending = this.options.timers.setTimeout(() => {
      this.pending = undefined;
      this.sendIfChanged();
    }, this.options.coalesceMs ?? 20);
  }

  private sendIfChanged(): void {
    if (JSON.stringify(this.readings) !== this.lastSent) this.send();
  }

  /** A new period (the fleet's configuration sets it): the next heartbeat is `ms` from now. */
  setPeriod(ms: number): void {
    if (ms === this.periodMs) return;
    this.periodMs = ms;
    if (this.stopped || this.timer === undefined) return;
    this.options.timers.clearTimeout(this.timer);
    this.timer = this.options.timers.setTimeout(() => void this.beat(), ms);
  }

  get current(): TerminalReadings {
    return { ...this.readings };
  }

  stop(): void {
    this.stopped = true;
    this.options.timers.clearTimeout(this.timer);
    this.options.timers.clearTimeout(this.pending);
    this.pending = undefined;
    this.options.reader.off('status', this.onStatus);
    this.options.reader.off('progress', this.onProgress);
  }

  private async beat(): Promise<void> {
    if (this.stopped) return;
    try {
      const status = defined(await this.options.reader.status());
      // Merged after the await: readings that changed meanwhile (connected...) are kept.
      this.readings = { ...this.readings, ...status };
    } catch (error) {
      this.options.logger.warn(
        { err: { message: (error as Error).message } },
        'reader status failed',
      );
    }
    if (this.stopped) return;
    this.send();
    this.timer = this.options.timers.setTimeout(() => void this.beat(), this.periodMs);
  }

  private send(): void {
    if (this.stopped) return;
    this.lastSent = JSON.stringify(this.readings);
    const status: StatusReport = {
      type: 'status',
      at: this.options.clock.now().toISOString(),
      readings: this.current,
    };
    // A reader's screen may show a card number in full: it leaves the terminal masked.
    this.options.journal.recordStatus(
      withoutCardNumbers(this.options.logger, 'status', maskFreeText(status, FREE_TEXT.status)),
    );
    this.options.reported();
  }
}

function defined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
