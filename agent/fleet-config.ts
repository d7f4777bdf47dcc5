/**
 * The configuration the relay pushes (protocol/fleet-config.ts; docs/fleet.md,
 * "Configuration"), on the agent's side: checked, applied, kept, reported.
 *
 * - What the relay sets overlays the agent's own file: a field it does not set keeps the
 *   file's value.
 * - Heartbeat period, log level, idle screen text, maintenance window and end-of-day
 *   schedule apply at once.
 *   Reader settings and the printer's head width reopen the hardware, so they wait until
 *   the terminal is idle (never during a payment): the report says PENDING meanwhile.
 *   So does a change of `local_api` (local mode): a POS's local request must not lose its
 *   listener mid-payment. The settings in force are `localApi`, and `onLocalApi` tells
 *   whoever serves the local API when they change.
 * - A configuration the agent cannot apply (a setting its reader does not take) is
 *   reported REJECTED with the reason; the last good one stays in force.
 * - The last good one is kept in `fleet-config.json` in the data directory (written whole
 *   or not at all), so that it survives a restart and a broker that lost it. New reader
 *   settings are kept on trial until the reader answers with them (agent/cli.ts); if it
 *   does not, the ones before come back and the version is refused until the agent restarts.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { z } from 'zod';
import {
  ConfigMessage,
  type ConfigReportMessage,
  type FleetConfig,
} from '../protocol/fleet-config.js';
import { localApiSettings, type LocalApiSettings } from '../protocol/local-api.js';
import type { Clock } from '../common/clock.js';
import { printable } from '../common/terminal-text.js';
import { ZvtProfileName } from '../firmware-bridge/zvt/reader/profiles.js';
import type { AgentConfig } from './config.js';

export const FLEET_CONFIG_FILE = 'fleet-config.json';

/**
 * What the agent keeps: the last good configuration and its version. `trial`: kept for
 * settings that reopen the reader, not yet proven by a reader that answers with them;
 * `previous` is the one to go back to if it does not.
 */
const KeptFile = ConfigMessage.extend({
  trial: z.boolean().optional(),
  previous: ConfigMessage.nullable().optional(),
});
export type KeptFile = z.infer<typeof KeptFile>;
/** A version the reader refused once it was reopened with it, and why. */
export interface RefusedConfig {
  version: string;
  reason: string;
}

function readJson<T>(file: string, schema: z.ZodType<T>): T | undefined {
  try {
    const parsed = schema.safeParse(JSON.parse(fs.readFileSync(file, 'utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** Writes a file whole or not at all: a power loss leaves the old one or the new one. */
export function writeWhole(file: string, value: unknown): void {
  const temp = `${file}.${process.pid}.tmp`;
  const fd = fs.openSync(temp, 'w', 0o600);
  try {
    fs.writeFileSync(fd, JSON.stringify(value));
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(temp, file);
}

export function readKeptConfig(dataDir: string): KeptFile | undefined {
  return readJson(path.join(dataDir, FLEET_CONFIG_FILE), KeptFile);
}

/** The reader answered with the kept configuration: it is good. */
export function confirmKept(dataDir: string): void {
  const kept = readKeptConfig(dataDir);
  if (kept?.trial)
    writeWhole(path.join(dataDir, FLEET_CONFIG_FILE), {
      version: kept.version,
      config: kept.config,
    });
}

/**
 * The reader did not answer with the kept configuration: the one before comes back.
 * Answers the refusal, for the agent to report (and not try again while it runs).
 */
export function refuseKept(dataDir: string, reason: string): RefusedConfig | undefined {
  const kept = readKeptConfig(dataDir);
  if (!kept) return undefined;
  const file = path.join(dataDir, FLEET_CONFIG_FILE);
  if (kept.previous) writeWhole(file, kept.previous);
  else fs.rmSync(file, { force: true });
  return { version: kept.version, reason };
}

/**
 * The agent's config with the fleet's settings over it, or the problems that keep them
 * from applying to this terminal's hardware.
 */
export function overlay(
  base: AgentConfig,
  fleet: FleetConfig,
): { ok: true; config: AgentConfig } | { ok: false; problems: string[] } {
  const problems: string[] = [];
  const reader = { ...base.reader };
  if (fleet.reader?.profile !== undefined) {
    const profile = ZvtProfileName.safeParse(fleet.reader.profile);
    if (base.reader.protocol !== 'zvt') {
      problems.push(
        `reader.profile: this terminal's reader speaks the ${base.reader.protocol} protocol; profiles are for ZVT terminals`,
      );
    } else if (!profile.success) {
      problems.push(
        `reader.profile: the reader does not know "${fleet.reader.profile}" (it knows ${ZvtProfileName.options.join(', ')})`,
      );
    } else {
      reader.profile = profile.data;
    }
  }
  if (fleet.reader?.baud_rate !== undefined) {
    if (base.reader.tcp !== undefined) {
      problems.push(
        'reader.baud_rate: this terminal reaches its reader over the network (reader.tcp)',
      );
    } else {
      reader.baud_rate = fleet.reader.baud_rate;
    }
  }
  if (problems.length) return { ok: false, problems };
  const printer =
    fleet.printer_head_width !== undefined && base.printer.type !== 'none'
      ? { ...base.printer, head_width: fleet.printer_head_width }
      : base.printer;
  return {
    ok: true,
    config: {
      ...base,
      reader,
      printer,
      heartbeat_s: fleet.heartbeat_s ?? base.heartbeat_s,
      log_level: fleet.log_level ?? base.log_level,
    },
  };
}

/** Whether going from one config to the other reopens the reader or the printer. */
export function needsHardware(from: AgentConfig, to: AgentConfig): boolean {
  return (
    JSON.stringify(from.reader) !== JSON.stringify(to.reader) ||
    JSON.stringify(from.printer) !== JSON.stringify(to.printer)
  );
}

export interface FleetConfigApplierOptions {
  /** The agent's own file, as loaded. */
  base: AgentConfig;
  /** The config the agent runs with now (the file with the kept configuration over it). */
  running: AgentConfig;
  /** What applies without reopening the hardware. */
  live: {
    heartbeatMs(ms: number): void;
    logLevel(level: AgentConfig['log_level']): void;
    idleScreenText(text: string | undefined): void;
    /** The end-of-day schedule (undefined: the defaults). */
    endOfDay?(schedule: FleetConfig['end_of_day']): void;
  };
  /** Whether no payment runs now; and a way to hear when one ends. */
  isIdle(): boolean;
  onIdle(listener: () => void): () => void;
  /**
   * Reopens the hardware with the kept configuration (the agent starts over, in the same
   * process). Absent where the agent does not own its process: such settings are refused.
   */
  restart?: () => void;
  /** A version the reader refused since the process started: reported, not tried again. */
  refused?: RefusedConfig;
  report(message: ConfigReportMessage): void;
  clock: Clock;
  logger: Logger;
}

export class FleetConfigApplier {
  private kept: ConfigMessage | undefined;
  private last: ConfigReportMessage | undefined;
  private waiting: (() => void) | undefined;
  private stopped = false;
  private localApiInForce: LocalApiSettings = localApiSettings(undefined);
  private readonly localApiListeners = new Set<(settings: LocalApiSettings) => void>();

  constructor(private readonly options: FleetConfigApplierOptions) {
    const kept = readKeptConfig(options.base.data_dir);
    this.kept = kept && { version: kept.version, config: kept.config };
    if (this.kept) this.applyLive(this.kept.config);
  }

  /** The configuration message from the relay, as it arrived (checked here). */
  received(value: unknown): void {
    const parsed = ConfigMessage.safeParse(value);
    if (!parsed.success) {
      const version = (value as { version?: unknown } | null)?.version;
      const reason = parsed.error.issues
        .map((i) => `${i.path.map(String).join('.') || '(message)'}: ${i.message}`)
        .join('; ')
        .slice(0, 500);
      this.options.logger.warn({ reason }, 'configuration refused: invalid');
      if (typeof version === 'string' && /^[0-9a-f]{16}$/.test(version)) {
        this.reject(version, reason);
      }
      return;
    }
    const message = parsed.data;
    if (message.version === this.kept?.version) {
      this.cancelWait();
      return this.send({ version: message.version, status: 'APPLIED' });
    }
    const { refused } = this.options;
    if (refused?.version === message.version) return this.reject(message.version, refused.reason);
    const next = overlay(this.options.base, message.config);
    if (!next.ok) return this.reject(message.version, next.problems.join('; '));
    if (!needsHardware(this.options.running, next.config)) {
      const applyNow = () => {
        this.cancelWait();
        this.keep(message);
        this.applyLive(message.config);
        this.options.logger.info({ version: message.version }, 'configuration applied');
        this.send({ version: message.version, status: 'APPLIED' });
      };
      if (!this.changesLocalApi(message.config) || this.options.isIdle()) return applyNow();
      return this.applyWhenIdle(message.version, applyNow);
    }
    const restart = this.options.restart;
    if (!restart) {
      return this.reject(
        message.version,
        'reader and printer settings need an agent that runs in its own process',
      );
    }
    this.cancelWait();
    const apply = () => {
      this.cancelWait();
      this.keep(message, true);
      this.options.logger.info(
        { version: message.version },
        'configuration kept: reopening the reader and printer with it',
      );
      restart();
    };
    if (this.options.isIdle()) return apply();
    this.applyWhenIdle(message.version, apply);
  }

  /** The local API's settings in force (defaults: off). */
  get localApi(): LocalApiSettings {
    return this.localApiInForce;
  }

  /** Calls `listener` with the local API's settings each time they change; answers an unsubscribe. */
  onLocalApi(listener: (settings: LocalApiSettings) => void): () => void {
    this.localApiListeners.add(listener);
    return () => this.localApiListeners.delete(listener);
  }

  /** For the doctor's checklist. */
  describe(): string {
    const applied = this.kept
      ? `version ${this.kept.version} in force`
      : 'the file alone (none from the relay yet)';
    const last =
      this.last && this.last.status !== 'APPLIED'
        ? `; ${this.last.version} ${this.last.status}${this.last.reason ? `: ${this.last.reason}` : ''}`
        : '';
    return `${applied}${last}`;
  }

  /** Tells the relay again what it last told (after a reconnect). */
  repeat(): void {
    if (this.last) this.options.report({ ...this.last, at: this.now() });
  }

  stop(): void {
    this.stopped = true;
    this.cancelWait();
  }

  private changesLocalApi(config: FleetConfig): boolean {
    return (
      JSON.stringify(localApiSettings(config.local_api)) !== JSON.stringify(this.localApiInForce)
    );
  }

  private applyWhenIdle(version: string, apply: () => void): void {
    this.cancelWait();
    this.send({ version, status: 'PENDING' });
    this.options.logger.info({ version }, 'configuration waits for the terminal to be idle');
    this.waiting = this.options.onIdle(() => {
      if (this.options.isIdle()) apply();
    });
  }

  private reject(version: string, reason: string): void {
    this.options.logger.warn({ version, reason }, 'configuration refused; the last good one stays');
    this.send({ version, status: 'REJECTED', reason: printable(reason).slice(0, 500) });
  }

  /** `trial`: the reader has yet to answer with it (see refuseKept). */
  private keep(message: ConfigMessage, trial = false): void {
    const kept: KeptFile = trial
      ? { ...message, trial, previous: this.kept ?? null }
      : { version: message.version, config: message.config };
    writeWhole(path.join(this.options.base.data_dir, FLEET_CONFIG_FILE), kept);
    this.kept = { version: message.version, config: message.config };
  }

  private applyLive(config: FleetConfig): void {
    const { base, live } = this.options;
    live.heartbeatMs((config.heartbeat_s ?? base.heartbeat_s) * 1000);
    live.logLevel(config.log_level ?? base.log_level);
    live.idleScreenText(config.idle_screen_text);
    live.endOfDay?.(config.end_of_day);
    const localApi = localApiSettings(config.local_api);
    if (JSON.stringify(localApi) === JSON.stringify(this.localApiInForce)) return;
    this.localApiInForce = localApi;
    for (const listener of this.localApiListeners) listener(localApi);
  }

  private send(report: Omit<ConfigReportMessage, 'at' | 'applied_version'>): void {
    if (this.stopped) return;
    this.last = {
      ...report,
      ...(this.kept ? { applied_version: this.kept.version } : {}),
      at: this.now(),
    };
    this.options.report(this.last);
  }

  private cancelWait(): void {
    this.waiting?.();
    this.waiting = undefined;
  }

  private now(): string {
    return this.options.clock.now().toISOString();
  }
}
