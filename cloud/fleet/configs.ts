/**
 * Desired configuration (docs/fleet.md, "Configuration"): the relay-wide layer, layers per
 * account, cohort and terminal, which settings merchants may set in theirs, each
 * terminal's effective configuration and its version, what its agent reported, and
 * whether the two agree. A change of a layer is stored, then pushed to every terminal it
 * reaches (retained: an agent offline now gets it when it connects); an agent coming
 * online, or reporting another version than the desired one, gets the desired one again,
 * so that a broker which lost its retained messages heals by itself.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import {
  localApiSettings,
  ConfigReportMessage,
  effectiveFleetConfig,
  type ConfigMessage,
  type ConfigScope,
  type FleetConfig,
  type FleetConfigResponse,
  type FleetSettingName,
  type MerchantSettingsResponse,
  type TerminalConfigView,
} from '../../protocol/index.js';
import type { Clock } from '../../common/clock.js';
import type { Principal } from '../accounts/principal.js';
import { ApiError } from '../errors.js';
import type {
  ConfigLayerRecord,
  RelayFleetConfigRecord,
  TerminalRecord,
} from '../store/records.js';
import type { Store } from '../store/store.js';
import type { TerminalRegistry } from '../terminals/registry.js';
import {
  countedLayer,
  inSettingOrder,
  merchantSettingSet,
  operatorSettingsAfter,
  refuseSettingsNotMerchants,
} from './merchant-settings.js';

/** Terminals listed in one answer (the first by id). */
export const MAX_LISTED_TERMINALS = 1000;

/** The version of an effective configuration: a hash of it, the same on every relay. */
export function configVersion(config: FleetConfig): string {
  return createHash('sha256').update(canonicalJson(config)).digest('hex').slice(0, 16);
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : 1));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export interface FleetConfigsOptions {
  store: Store;
  registry: TerminalRegistry;
  publish: (terminalId: string, message: ConfigMessage) => void;
  clock: Clock;
  logger: Logger;
}

type Layer = { scope: ConfigLayerRecord['scope']; scopeId: string };

/** An account's scopes; the relay-wide one is read and set on its own (`setRelay`). */
type AccountScope = Exclude<ConfigScope, { relay: true }>;

export class FleetConfigs {
  /** The push to every terminal after a relay-wide change: one at a time, never two at once. */
  private sweeping: Promise<void> = Promise.resolve();
  private sweepQueued = false;
  private closed = false;

  constructor(private readonly options: FleetConfigsOptions) {}

  /**
   * Replaces an account's layer, then pushes the new effective configuration to the
   * terminals it reaches. A merchant may change only the settings the operator lets
   * merchants set; the operator, acting for the account, any.
   */
  async set(principal: Principal, scope: AccountScope, config: FleetConfig) {
    const { store } = this.options;
    const { accountId, layer, terminals } = await this.resolve(principal, scope);
    const byOperator = principal.role === 'operator';
    const stored = await store.getConfigLayer(accountId, layer.scope, layer.scopeId);
    if (!byOperator) {
      const { merchantSettings } = await store.getRelayFleetConfig();
      refuseSettingsNotMerchants(
        stored?.config ?? {},
        config,
        merchantSettingSet(merchantSettings),
      );
    }
    const updatedAt = this.options.clock.now().toISOString();
    const operatorSettings = operatorSettingsAfter(stored, config, byOperator);
    await store.putConfigLayer({ accountId, ...layer, config, updatedAt, operatorSettings });
    this.options.logger.info({ ...layer, terminals: terminals.length }, 'configuration layer set');
    // Every terminal it reaches gets it, also those beyond the ones listed in the answer.
    for (const terminal of terminals) {
      this.options.publish(terminal.id, await this.desired(terminal));
    }
    return this.answer({ config, updatedAt }, await this.views(terminals));
  }

  async get(principal: Principal, scope: AccountScope): Promise<FleetConfigResponse> {
    const { accountId, layer, terminals } = await this.resolve(principal, scope);
    const stored = await this.options.store.getConfigLayer(accountId, layer.scope, layer.scopeId);
    return this.answer(stored, await this.views(terminals));
  }

  /**
   * Replaces the relay-wide layer (the operator's), then pushes every terminal of every
   * account its new effective configuration, in the background: the answer lists the
   * first 1,000 as they are desired now.
   */
  async setRelay(config: FleetConfig): Promise<FleetConfigResponse> {
    const updatedAt = this.options.clock.now().toISOString();
    await this.options.store.putRelayConfigLayer(config, updatedAt);
    this.options.logger.info('relay-wide configuration layer set');
    this.pushToEveryTerminal();
    return this.answer({ config, updatedAt }, await this.views(await this.everyTerminal()));
  }

  async getRelay(): Promise<FleetConfigResponse> {
    const relay = await this.options.store.getRelayFleetConfig();
    const stored = relay.layerUpdatedAt
      ? { config: relay.layer, updatedAt: relay.layerUpdatedAt }
      : undefined;
    return this.answer(stored, await this.views(await this.everyTerminal()));
  }

  /** Which settings merchants may set in their own layers. */
  async merchantSettings(): Promise<MerchantSettingsResponse> {
    const relay = await this.options.store.getRelayFleetConfig();
    return {
      settings: inSettingOrder(merchantSettingSet(relay.merchantSettings)),
      changed_at: relay.merchantSettingsUpdatedAt,
    };
  }

  /**
   * Sets which settings merchants may set. What they set of one they no longer may stays
   * stored but stops counting (and counts again once they may), so every terminal gets
   * its effective configuration again, in the background.
   */
  async setMerchantSettings(settings: FleetSettingName[]): Promise<MerchantSettingsResponse> {
    const updatedAt = this.options.clock.now().toISOString();
    const ordered = inSettingOrder(settings);
    await this.options.store.putMerchantSettings(ordered, updatedAt);
    this.options.logger.info({ settings: ordered }, 'settings merchants may set changed');
    this.pushToEveryTerminal();
    return { settings: ordered, changed_at: updatedAt };
  }

  /** The terminal's effective configuration and its version. */
  async desired(terminal: TerminalRecord, relay?: RelayFleetConfigRecord): Promise<ConfigMessage> {
    const { store } = this.options;
    const [wide, account, cohort, own] = await Promise.all([
      relay ?? store.getRelayFleetConfig(),
      store.getConfigLayer(terminal.accountId, 'account', ''),
      terminal.cohort
        ? store.getConfigLayer(terminal.accountId, 'cohort', terminal.cohort)
        : undefined,
      store.getConfigLayer(terminal.accountId, 'terminal', terminal.id),
    ]);
    const allowed = merchantSettingSet(wide.merchantSettings);
    const config = effectiveFleetConfig([
      wide.layer,
      countedLayer(account, allowed),
      countedLayer(cohort, allowed),
      countedLayer(own, allowed),
    ]);
    return { version: configVersion(config), config };
  }

  /** Ends the push to every terminal, if one runs, before the link closes. */
  async close(): Promise<void> {
    this.closed = true;
    await this.sweeping;
  }

  /** The agent came online: it gets its configuration again (a broker may have lost it). */
  async reachable(terminalId: string): Promise<void> {
    const terminal = await this.options.store.getTerminal(terminalId);
    if (terminal) this.options.publish(terminalId, await this.desired(terminal));
  }

  /** Keeps the agent's report; another version than the desired one gets the desired one again. */
  async reported(terminalId: string, report: ConfigReportMessage): Promise<void> {
    const { store, clock } = this.options;
    const terminal = await store.getTerminal(terminalId);
    if (!terminal) return;
    await store.putFleetReport({
      terminalId,
      kind: 'config',
      body: report,
      receivedAt: clock.now().toISOString(),
    });
    const desired = await this.desired(terminal);
    if (report.version !== desired.version) this.options.publish(terminalId, desired);
  }

  /**
   * Whether local mode is in force at the terminal's agent (docs/local-mode.md): desired,
   * and applied by the agent. Desired alone is not enough: an agent that has not applied
   * it yet runs a start as before and decides nothing, so its confirms would go unanswered.
   */
  async localModeInForce(terminalId: string): Promise<boolean> {
    const terminal = await this.options.store.getTerminal(terminalId);
    if (!terminal) return false;
    const { desired, in_sync: inForce } = await this.view(terminal);
    return inForce && localApiSettings(desired.config.local_api).enabled;
  }

  /** The terminal's desired configuration beside what its agent last reported. */
  async view(terminal: TerminalRecord): Promise<TerminalConfigView> {
    const [desired, reports] = await Promise.all([
      this.desired(terminal),
      this.options.store.fleetReports(terminal.id),
    ]);
    const stored = reports.find((r) => r.kind === 'config');
    const parsed = stored ? ConfigReportMessage.safeParse(stored.body) : undefined;
    const reported = parsed?.success ? parsed.data : null;
    return {
      terminal_id: terminal.id,
      desired,
      reported,
      in_sync: reported?.status === 'APPLIED' && reported.version === desired.version,
    };
  }

  private async views(terminals: TerminalRecord[]): Promise<TerminalConfigView[]> {
    const views: TerminalConfigView[] = [];
    for (const terminal of terminals.slice(0, MAX_LISTED_TERMINALS)) {
      views.push(await this.view(terminal));
    }
    return views;
  }

  private answer(
    stored: { config: FleetConfig; updatedAt: string } | undefined,
    views: TerminalConfigView[],
  ): FleetConfigResponse {
    return {
      layer: stored?.config ?? {},
      changed_at: stored?.updatedAt ?? null,
      terminals: views,
    };
  }

  /** Every terminal of every account, by account, then terminal id. */
  private async everyTerminal(): Promise<TerminalRecord[]> {
    const all = await this.options.store.listTerminals();
    return all.sort((a, b) =>
      a.accountId === b.accountId ? (a.id < b.id ? -1 : 1) : a.accountId < b.accountId ? -1 : 1,
    );
  }

  /**
   * Pushes every terminal its effective configuration, one after another, after a change
   * that reaches them all. One push at a time; changes meanwhile make one more, which reads
   * what they stored.
   */
  private pushToEveryTerminal(): void {
    if (this.sweepQueued) return;
    this.sweepQueued = true;
    this.sweeping = this.sweeping.then(async () => {
      this.sweepQueued = false;
      const { store, logger } = this.options;
      try {
        const relay = await store.getRelayFleetConfig();
        const terminals = await store.listTerminals();
        for (const terminal of terminals) {
          if (this.closed) return;
          this.options.publish(terminal.id, await this.desired(terminal, relay));
        }
        logger.info({ terminals: terminals.length }, 'configuration pushed to every terminal');
      } catch (error) {
        // Who missed it gets it when its agent comes online or reports another version.
        logger.error({ err: error }, 'configuration not pushed to every terminal');
      }
    });
  }

  /** The layer a scope names and the terminals it reaches; an account credential only. */
  private async resolve(
    principal: Principal,
    scope: AccountScope,
  ): Promise<{ accountId: string; layer: Layer; terminals: TerminalRecord[] }> {
    if (principal.terminalId !== undefined) {
      throw new ApiError('FORBIDDEN', 'only an account credential can read or set configuration');
    }
    const { accountId } = principal;
    const all = await this.options.registry.listTerminals(accountId);
    const byId = (a: TerminalRecord, b: TerminalRecord) => (a.id < b.id ? -1 : 1);
    if ('terminal_id' in scope) {
      const terminal = all.find((t) => t.id === scope.terminal_id);
      if (!terminal) throw new ApiError('TERMINAL_NOT_FOUND', `no terminal ${scope.terminal_id}`);
      return {
        accountId,
        layer: { scope: 'terminal', scopeId: terminal.id },
        terminals: [terminal],
      };
    }
    if ('cohort' in scope) {
      return {
        accountId,
        layer: { scope: 'cohort', scopeId: scope.cohort },
        terminals: all.filter((t) => t.cohort === scope.cohort).sort(byId),
      };
    }
    return { accountId, layer: { scope: 'account', scopeId: '' }, terminals: all.sort(byId) };
  }
}
