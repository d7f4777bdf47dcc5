/**
 * Status reports: connected, transaction state, screen message, battery, charging,
 * plugged in. One goes out whenever a reading changes (changes within `coalesceMs` make
 * one report: a payment's state and its screen text change a few ms apart, and each
 * report costs the relay a commit) and one every period even if nothing changed, the heartbeat that tells the relay
 * the terminal is alive. Each goes through the outbox, where a newer status replaces any
 * older one not yet acknowledged: after an outage the relay gets the current status once.
 */
import type { Logger } from 'pino';
import type { TerminalReadings } from '../protocol/terminal-status.js';
import type { Clock, Timers } from './clock.js';
import type { Journal } from './journal.js';
import type { ReaderPort, ReaderProgress, ReaderReadings } from './ports.js';

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
  private timer: unknown;
  private stopped = false;
  private readonly onStatus = (status: ReaderReadings) => this.update(status);
  private readonly onProgress = (progress: ReaderProgress) =>
    this.update({ screen_message: progress.screen_text });

  constructor(private readonly options: HeartbeatOptions) {
    options.reader.on('status', this.onStatus);
    options.reader.on('progress', this.onProgress);
  }

  /** Starts the period; the first heartbeat asks the reader at once. */
  start(): void {
    void this.beat();
  }

  /** Merges new readings; reports them (once per window) if anything changed. */
  update(readings: TerminalReadings): void {
    const merged = { ...this.readings, ...defined(readings) };
    if (JSON.stringify(merged) === JSON.stringify(this.readings)) return;
    this.readings = merged;
    if (this.pending !== undefined || this.stopped) return;
    this.pending = this.options.timers.setTimeout(() => {
      this.pending = undefined;
      if (JSON.stringify(this.readings) !== this.lastSent) this.send();
    }, this.options.coalesceMs ?? 20);
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
    this.timer = this.options.timers.setTimeout(() => void this.beat(), this.options.periodMs);
  }

  private send(): void {
    if (this.stopped) return;
    this.lastSent = JSON.stringify(this.readings);
    this.options.journal.recordStatus({
      type: 'status',
      at: this.options.clock.now().toISOString(),
      readings: this.current,
    });
    this.options.reported();
  }
}

function defined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
