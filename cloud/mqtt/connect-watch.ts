/**
 * What an operator needs to see of agents (re)connecting to the embedded broker: every
 * attempt is counted by outcome (for tps_mqtt_connects_total), and a window with a storm
 * in it (many attempts, or any cut off for lack of time or room) ends with one warning
 * that says how many and how it went. After a relay restart every agent comes back within
 * a minute or two; a busy Node process accepts ≈ 100-150 connections a second
 * (docs/architecture.md, platform facts), so some wait, and the log says so.
 */
import type { Logger } from 'pino';
import { systemTimers, type Timers } from '../../common/clock.js';

export type ConnectOutcome = 'accepted' | 'refused' | 'timed_out' | 'over_limit';

export interface ConnectWatchOptions {
  logger: Logger;
  /** Counts each attempt (for metrics). */
  onConnect?: (outcome: ConnectOutcome) => void;
  /** Agents connected now, told in the warning. */
  connected: () => number;
  timers?: Timers;
  /** The window a warning sums up; at most one warning per window. Default 10 s. */
  windowMs?: number;
  /** This many attempts in one window make a storm. Default 500 (50 a second). */
  stormAttempts?: number;
}

export const CONNECT_WINDOW_MS = 10_000;
export const STORM_ATTEMPTS = 500;

export class ConnectWatch {
  private counts: Record<ConnectOutcome, number> = {
    accepted: 0,
    refused: 0,
    timed_out: 0,
    over_limit: 0,
  };
  private window: unknown;
  private readonly timers: Timers;

  constructor(private readonly options: ConnectWatchOptions) {
    this.timers = options.timers ?? systemTimers;
  }

  record(outcome: ConnectOutcome): void {
    this.options.onConnect?.(outcome);
    this.counts[outcome]++;
    this.window ??= this.timers.setTimeout(
      () => this.endWindow(),
      this.options.windowMs ?? CONNECT_WINDOW_MS,
      { unref: true },
    );
  }

  close(): void {
    this.timers.clearTimeout(this.window);
    this.window = undefined;
  }

  private endWindow(): void {
    this.window = undefined;
    const counts = this.counts;
    this.counts = { accepted: 0, refused: 0, timed_out: 0, over_limit: 0 };
    const attempts = counts.accepted + counts.refused + counts.timed_out + counts.over_limit;
    const cutOff = counts.timed_out + counts.over_limit;
    if (attempts < (this.options.stormAttempts ?? STORM_ATTEMPTS) && cutOff === 0) return;
    const seconds = (this.options.windowMs ?? CONNECT_WINDOW_MS) / 1000;
    this.options.logger.warn(
      { ...counts, windowS: seconds, agentsConnected: this.options.connected() },
      `agents (re)connecting in a storm: ${attempts} attempts in ${seconds} s, ${counts.accepted} accepted, ${cutOff} cut off`,
    );
  }
}
