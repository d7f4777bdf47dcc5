/**
 * The emulated reader's status: battery (draining off the charger, charging on it), plugged
 * in, and the screen message. A `status.report` goes out on every change, unasked, and
 * with the query's id when asked. Unasked reports coalesce: while one waits for its ACK,
 * later changes wait and only the newest is sent. While the host does not answer (an
 * ACK_TIMEOUT), unasked reports stop, so a reader nobody listens to does not fill the line;
 * the next message from the host brings a fresh report.
 */
import type { ReaderStatus } from '../reader/card-reader.js';
import type { ReaderMessage } from '../serial/messages.js';
import type { Timers } from '../../common/clock.js';

export interface BatteryOptions {
  /** Charge at power-on, 0-100 (default 80). */
  percentage?: number;
  /** On the charger at power-on (default false). */
  pluggedIn?: boolean;
  /**
   * One percent lost off the charger, or gained on it, every `tickMs` (default 60 000): slow
   * enough not to flood the line, fast enough to see on a bench.
   */
  tickMs?: number;
}

export interface ReaderStatusOptions {
  /** `false`: a stationary reader, always plugged in, without battery. */
  battery: BatteryOptions | false;
  timers: Timers;
  send: (message: ReaderMessage) => Promise<void>;
}

export class ReaderStatusReporter {
  private screen = 'Ready';
  private percentage: number;
  private pluggedIn: boolean;
  private readonly hasBattery: boolean;
  private readonly tickMs: number;
  private tickTimer: unknown;
  private lastSent: string | undefined;
  private sending = false;
  private hostAbsent = false;

  constructor(private readonly options: ReaderStatusOptions) {
    const battery = options.battery;
    this.hasBattery = battery !== false;
    this.percentage = clampPercent(battery === false ? 100 : (battery.percentage ?? 80));
    this.pluggedIn = battery === false ? true : (battery.pluggedIn ?? false);
    this.tickMs = battery === false ? 0 : (battery.tickMs ?? 60_000);
    this.scheduleTick();
  }

  readings(): ReaderStatus {
    return this.hasBattery
      ? {
          battery_percentage: this.percentage,
          battery_charging: this.pluggedIn && this.percentage < 100,
          plugged_in: this.pluggedIn,
          screen_message: this.screen,
        }
      : { plugged_in: true, screen_message: this.screen };
  }

  showScreen(text: string): void {
    this.screen = text;
    this.changed();
  }

  /** Physical: the charger plugged in or pulled (a stationary reader is always plugged in). */
  plug(pluggedIn: boolean): void {
    if (!this.hasBattery) return;
    this.pluggedIn = pluggedIn;
    this.changed();
  }

  /** Physical: a battery swapped for one at this charge. */
  setBattery(percentage: number): void {
    if (!this.hasBattery) return;
    this.percentage = clampPercent(percentage);
    this.changed();
  }

  /** Answers a status.query at once, whatever is queued. */
  answer(queryId: string | undefined): Promise<void> {
    const readings = this.readings();
    this.lastSent = JSON.stringify(readings);
    return this.options.send({
      v: 1,
      type: 'status.report',
      ...(queryId === undefined ? {} : { query_id: queryId }),
      ...readings,
    });
  }

  /** A new line, or the host heard from again: report the current status unasked. */
  announce(): void {
    this.hostAbsent = false;
    this.lastSent = undefined;
    this.changed();
  }

  /** A message from the host arrived: resume unasked reports if they had stopped. */
  hostSeen(): void {
    if (this.hostAbsent) this.announce();
  }

  /** The host did not acknowledge a message: stop unasked reports until it speaks. */
  hostGone(): void {
    this.hostAbsent = true;
  }

  stop(): void {
    if (this.tickTimer !== undefined) this.options.timers.clearTimeout(this.tickTimer);
    this.tickTimer = undefined;
  }

  private scheduleTick(): void {
    if (!this.hasBattery || this.tickMs <= 0) return;
    this.tickTimer = this.options.timers.setTimeout(() => {
      this.percentage = clampPercent(this.percentage + (this.pluggedIn ? 1 : -1));
      this.changed();
      this.scheduleTick();
    }, this.tickMs);
  }

  private changed(): void {
    if (this.sending || this.hostAbsent) return;
    const readings = this.readings();
    const text = JSON.stringify(readings);
    if (text === this.lastSent) return;
    this.lastSent = text;
    this.sending = true;
    void this.options.send({ v: 1, type: 'status.report', ...readings }).finally(() => {
      this.sending = false;
      this.changed();
    });
  }
}

function clampPercent(value: number): number {
  return Math.min(100, Math.max(0, Math.round(value)));
}
