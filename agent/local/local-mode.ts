/**
 * Local mode in the running agent (docs/local-mode.md): the engine, the local API's
 * listener and its TLS identity, driven by the fleet's `local_api` setting in force.
 *
 * - The engine runs while the setting is on, and for as long as the journal holds local
 *   records after it is turned off: their reports, grace periods and pause time-outs
 *   still need it.
 * - The listener is up only while `local_api.enabled`: HTTPS once the relay signed the
 *   agent's certificate (renewals swap the context in place), plain HTTP only with
 *   `plain_http`. A port in use is logged and tried again with a back-off.
 * - While the relay is out of reach, a new local transaction passes the bounds of
 *   `local_api.while_unreachable` or is refused `LOCAL_LIMIT_REACHED`, nothing journaled.
 */
import type { Logger } from 'pino';
import { Backoff, type BackoffOptions } from '../../common/backoff.js';
import { partLogger } from '../../common/logging.js';
import type { Clock, Timers } from '../../common/clock.js';
import { ApiError } from '../../protocol/api-error.js';
import type { LocalApiSettings } from '../../protocol/local-api.js';
import type { LocalCertRequestMessage } from '../../protocol/local-tls.js';
import type { TerminalReadings, TerminalStatus } from '../../protocol/terminal-status.js';
import type {
  CreateRequest,
  MachineSettings,
} from '../../protocol/transaction-rules/state-machine.js';
import type { Journal } from '../journal.js';
import type { LocalApiAuthenticator } from '../local-api/authenticator.js';
import { startLocalApi, type LocalApi, type LocalApiOptions } from '../local-api/server.js';
import { LocalTlsIdentity, type LocalTlsIdentityOptions } from '../local-api/tls-identity.js';
import { LocalEngine, type LocalEngineOptions } from './engine.js';

/** With the link up, local reports waiting this long without an acknowledgement: unreachable. */
export const DEFAULT_UNACKNOWLEDGED_MS = 30_000;

/** A local API given in code (tests, benches): it listens from start to stop, whatever the fleet says. */
export type FixedLocalApi = Pick<
  LocalApiOptions,
  'host' | 'port' | 'tls' | 'authenticator' | 'limits'
>;

/** The TLS identity's knobs; `enabled: true` runs it whatever the setting says. */
export type LocalTlsTuning = Partial<
  Pick<LocalTlsIdentityOptions, 'enabled' | 'port' | 'addresses' | 'checkEveryMs'>
>;

export interface LocalModeOptions {
  terminalId: string;
  dataDir: string;
  journal: Journal;
  executor: LocalEngineOptions['executor'];
  machine: MachineSettings;
  /** The fleet's `local_api` in force, and its changes. */
  settings: {
    current(): LocalApiSettings;
    onChange(listener: (settings: LocalApiSettings) => void): () => void;
  };
  authenticator: LocalApiAuthenticator;
  /** The agent's readings (its heartbeat): what the local status answers, and where the backlog is told. */
  readings: { current: TerminalReadings; update(readings: TerminalReadings): void };
  linkConnected: () => boolean;
  sendCertRequest: (request: LocalCertRequestMessage) => boolean;
  /** Instead of the fleet's setting: the engine always, and this API from start to stop. */
  fixed?: { api?: FixedLocalApi };
  tls?: LocalTlsTuning;
  unacknowledgedMs?: number;
  /** Back-off between tries to listen on a port in use (default 1 s doubling to 60 s). */
  listenRetry?: Partial<BackoffOptions>;
  clock: Clock;
  timers: Timers;
  logger: Logger;
  reported: () => void;
}

export class LocalMode {
  private engineInstance: LocalEngine | undefined;
  private apiInstance: LocalApi | undefined;
  private tlsIdentity: LocalTlsIdentity | undefined;
  /** The port the identity's certificate names (told to the POS with the trust). */
  private tlsPort: number | undefined;
  /** The settings the listener and identity were last arranged for. */
  private arranged: LocalApiSettings | undefined;
  /** Serialises listening and closing: a change waits for the one before. */
  private arranging: Promise<void> = Promise.resolve();
  private retryTimer: unknown;
  private readonly listenBackoff: Backoff;
  /** When the link last came up or a local report was last acknowledged. */
  private progressAt = 0;
  private stopped = false;
  private readonly unsubscribe: Array<() => void> = [];

  constructor(private readonly options: LocalModeOptions) {
    this.listenBackoff = new Backoff({ initialMs: 1000, maxMs: 60_000, ...options.listenRetry });
    // Before the executor's recovery: an outcome it learns moves a local record in its commit.
    if (options.fixed || options.settings.current().enabled || options.journal.hasLocalRecords()) {
      this.ensureEngine();
    }
  }

  get engine(): LocalEngine | undefined {
    return this.engineInstance;
  }

  get api(): LocalApi | undefined {
    return this.apiInstance;
  }

  get tls(): LocalTlsIdentity | undefined {
    return this.tlsIdentity;
  }

  /** After the link exists: follows the setting from now on. */
  async start(): Promise<void> {
    const { journal, settings } = this.options;
    this.unsubscribe.push(
      journal.onLocalBacklog((why) => {
        if (why === 'acknowledged') this.progressAt = this.now();
        this.tellReadings();
      }),
      settings.onChange(() => this.arrange()),
    );
    this.tellReadings();
    if (this.options.fixed?.api) {
      const { tls } = this.options;
      if (tls?.enabled) this.startTls(tls.port);
      this.apiInstance = await this.listen(this.options.fixed.api);
      return;
    }
    if (this.options.tls?.enabled) this.startTls(this.options.tls.port);
    this.arrange();
    await this.arranging;
  }

  /** The MQTT link came up or went down. */
  linkChanged(connected: boolean): void {
    if (connected) {
      this.progressAt = this.now();
      this.tlsIdentity?.linkUp();
    }
    this.tellReadings();
  }

  /** The relay's answer to a certificate request. */
  certificateAnswer(value: unknown): void {
    this.tlsIdentity?.received(value);
  }

  /**
   * Whether the relay is in reach: the link is up, and local reports do not wait longer
   * than `unacknowledgedMs` for an acknowledgement (a broker that takes them but a relay
   * that does not answer is as far as none).
   */
  relayReachable(): boolean {
    if (!this.options.linkConnected()) return false;
    const { oldestAt } = this.options.journal.localBacklog();
    if (oldestAt === undefined) return true;
    const since = Math.max(this.progressAt, Date.parse(oldestAt));
    return this.now() - since <= (this.options.unacknowledgedMs ?? DEFAULT_UNACKNOWLEDGED_MS);
  }

  /** The terminal status the local API answers: the POS reached the terminal, so connected. */
  status(): TerminalStatus {
    const backlog = this.options.journal.localBacklog();
    return {
      ...this.options.readings.current,
      connected: true,
      relay_reachable: this.relayReachable(),
      local_pending_count: backlog.count,
      local_pending_total: backlog.total,
      terminal_id: this.options.terminalId,
      updated_at: new Date(this.now()).toISOString(),
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const unsubscribe of this.unsubscribe.splice(0)) unsubscribe();
    this.options.timers.clearTimeout(this.retryTimer);
    this.tlsIdentity?.stop();
    await this.arranging;
    await this.apiInstance?.close();
    this.apiInstance = undefined;
    this.engineInstance?.stop();
  }

  private ensureEngine(): LocalEngine {
    if (this.engineInstance) return this.engineInstance;
    const o = this.options;
    this.engineInstance = new LocalEngine({
      terminalId: o.terminalId,
      journal: o.journal,
      executor: o.executor,
      clock: o.clock,
      timers: o.timers,
      logger: o.logger,
      settings: o.machine,
      reported: o.reported,
      admit: (create) => this.admit(create),
    });
    this.engineInstance.start();
    return this.engineInstance;
  }

  /** Refuses a new transaction beyond a bound while the relay is out of reach. */
  private admit({ request }: CreateRequest): void {
    if (this.relayReachable()) return;
    const bounds = this.options.settings.current().while_unreachable;
    const backlog = this.options.journal.localBacklog();
    const refuse = (bound: keyof typeof bounds, what: string) => {
      this.options.logger.warn(
        { bound, value: bounds[bound], externalId: request.external_id },
        'local create refused: the relay is out of reach and a bound is reached',
      );
      throw new ApiError(
        'LOCAL_LIMIT_REACHED',
        `the relay is out of reach and local_api.while_unreachable.${bound} is ${bounds[bound]}: ${what}`,
      );
    };
    if (request.requested_amount > bounds.max_amount) {
      refuse('max_amount', `the amount ${request.requested_amount} is above it`);
    }
    if (backlog.count + 1 > bounds.max_pending_count) {
      refuse('max_pending_count', `${backlog.count} transactions wait to be forwarded`);
    }
    if (backlog.total + request.requested_amount > bounds.max_pending_total) {
      refuse('max_pending_total', `${backlog.total} waits to be forwarded`);
    }
    if (backlog.oldestAt !== undefined) {
      const ageSeconds = Math.floor((this.now() - Date.parse(backlog.oldestAt)) / 1000);
      if (ageSeconds > bounds.max_pending_age_seconds) {
        refuse('max_pending_age_seconds', `the oldest not forwarded is ${ageSeconds} s old`);
      }
    }
  }

  /** Tells the heartbeat what waits: the relay hears it, and an event when it reaches 0. */
  private tellReadings(): void {
    if (!this.engineInstance || this.stopped) return;
    const backlog = this.options.journal.localBacklog();
    this.options.readings.update({
      relay_reachable: this.relayReachable(),
      local_pending_count: backlog.count,
      local_pending_total: backlog.total,
    });
  }

  /** Brings the listener and the identity in line with the settings in force, one change at a time. */
  private arrange(): void {
    this.arranging = this.arranging.then(() => this.arrangeNow());
  }

  private async arrangeNow(): Promise<void> {
    if (this.stopped || this.options.fixed?.api) return;
    const settings = this.options.settings.current();
    const before = this.arranged;
    if (before && JSON.stringify(before) === JSON.stringify(settings) && this.apiInstance) return;
    this.arranged = settings;
    const listenChanged =
      !before ||
      before.enabled !== settings.enabled ||
      before.plain_http !== settings.plain_http ||
      JSON.stringify(before.listen) !== JSON.stringify(settings.listen);
    if (!listenChanged && (this.apiInstance || !settings.enabled)) return;
    this.options.timers.clearTimeout(this.retryTimer);
    if (this.apiInstance) {
      await this.apiInstance.close();
      this.apiInstance = undefined;
      this.options.logger.info('local API stopped listening');
    }
    if (!settings.enabled) {
      if (!this.options.tls?.enabled) this.stopTls();
      return;
    }
    this.ensureEngine();
    if (settings.plain_http) {
      if (!this.options.tls?.enabled) this.stopTls();
      await this.listenOrRetry(settings, undefined);
      return;
    }
    const identity =
      this.tlsIdentity && this.tlsPort === settings.listen.port
        ? this.tlsIdentity
        : this.startTls(settings.listen.port);
    const credentials = identity.current();
    if (!credentials) {
      this.options.logger.info(
        'local API waits for its certificate from the relay before it listens',
      );
      return;
    }
    await this.listenOrRetry(settings, credentials);
  }

  private startTls(port: number | undefined): LocalTlsIdentity {
    this.stopTls();
    const o = this.options;
    const identity = new LocalTlsIdentity({
      ...o.tls,
      enabled: true,
      ...(port !== undefined ? { port } : {}),
      dataDir: o.dataDir,
      clock: o.clock,
      timers: o.timers,
      logger: partLogger(o.logger, 'local-tls'),
      send: o.sendCertRequest,
    });
    this.tlsIdentity = identity;
    this.tlsPort = port;
    identity.on('renewed', (credentials) => {
      if (this.apiInstance) this.apiInstance.setTls(credentials);
      // The first certificate: the listener that waited for it starts now.
      else if (!this.options.fixed?.api) {
        this.arranged = undefined;
        this.arrange();
      }
    });
    // Asks at once if the link is up; otherwise linkChanged(true) asks.
    identity.start();
    return identity;
  }

  private stopTls(): void {
    this.tlsIdentity?.stop();
    this.tlsIdentity?.removeAllListeners();
    this.tlsIdentity = undefined;
    this.tlsPort = undefined;
  }

  private async listenOrRetry(
    settings: LocalApiSettings,
    tls: { key: string; cert: string } | undefined,
  ): Promise<void> {
    const { host, port } = settings.listen;
    try {
      this.apiInstance = await this.listen({
        host,
        port,
        tls,
        authenticator: this.options.authenticator,
      });
      this.listenBackoff.reset();
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      const delayMs = this.listenBackoff.next();
      this.options.logger.error(
        { host, port, code, err: { message: (error as Error).message }, retryInMs: delayMs },
        code === 'EADDRINUSE'
          ? 'local API cannot listen: the port is in use by another program; trying again'
          : 'local API cannot listen; trying again',
      );
      this.retryTimer = this.options.timers.setTimeout(
        () => {
          this.arranged = undefined;
          this.arrange();
        },
        delayMs,
        { unref: true },
      );
    }
  }

  private listen(api: FixedLocalApi): Promise<LocalApi> {
    return startLocalApi({
      ...api,
      engine: this.ensureEngine(),
      status: () => this.status(),
      logger: this.options.logger,
      timers: this.options.timers,
    });
  }

  private now(): number {
    return this.options.clock.now().getTime();
  }
}
