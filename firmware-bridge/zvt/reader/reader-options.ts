/** What the ZVT driver is opened with (zvt-card-reader.ts). */
import type { Clock, Timers } from '../../../common/clock.js';
import type { ApduChannel } from '../channel.js';
import type { ZvtCharset } from '../charsets.js';
import type { ZvtCommandLimits } from '../session.js';
import type { ZvtProfileName } from './profiles.js';

export interface ZvtReaderLogger {
  warn(message: string, context?: Record<string, unknown>): void;
}

export interface ZvtReaderOptions {
  channel: ApduChannel;
  /** The PT's password, 6 digits (default '000000'). */
  password?: string;
  profile?: ZvtProfileName;
  /** Character set of text the PT does not announce, instead of the profile's. */
  charset?: ZvtCharset;
  /** ISO 4217 alphabetic code registered with the PT (default 'EUR'). */
  currency?: string;
  /** The driver's own record of its transactions, for recovery (driver-state.ts). */
  stateFile: string;
  /** ZVT timers in ms: T3 acceptance (default 5000), T4 PT silence (default 180 000). */
  t3Ms?: number;
  t4Ms?: number;
  /** Bounds of each command whatever the PT sends (session.ts, DEFAULT_COMMAND_LIMITS). */
  limits?: Partial<ZvtCommandLimits>;
  timers?: Timers;
  clock?: Clock;
  logger?: ZvtReaderLogger;
  /** The PT's software version, each time a status enquiry brings a new one (fleet facts). */
  onSoftwareVersion?: (version: string) => void;
  /**
   * The PT said it needs an end-of-day first: terminal status F0 in a status enquiry, or a
   * command refused or aborted with F0 (the agent then runs one before the next payment).
   */
  onEndOfDayRequired?: () => void;
}
