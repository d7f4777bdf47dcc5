/**
 * Desired configuration (docs/fleet.md, "Configuration"): layers per account, cohort and
 * terminal, each terminal's effective configuration and its version, what its agent
 * reported, and whether the two agree. A change of a layer is stored, then pushed to
 * every terminal it reaches (retained: an agent offline now gets it when it connects);
 * an agent coming online, or reporting another version than the desired one, gets the
 * desired one again, so that a broker which lost its retained messages heals by itself.
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
  type TerminalConfigView,
} from '../../protocol/index.js';
import type { Clock } from '../../common/clock.js';
import type { Principal } from '../accounts/principal.js';
import { ApiError } from '../errors.js';
import type { ConfigLayerRecord, TerminalRecord } from '../store/records.js';
import type { Store } from '../store/store.js';
import type { TerminalRegistry } from '../terminals/registry.js';

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

export class FleetConfigs {
  constructor(private readonly options: FleetConfigsOptions) {}

  /** Replaces a layer, then pushes the new effective configuration to the terminals it reaches. */
  async set(principal: Principal, scope: ConfigScope, config: FleetConfig) {
    const { accountId, layer, terminals } = await this.resolve(principal, scope);
    const updatedAt = this.options.clock.now().toISOString();
    await this.options.store.putConfigLayer({ accountId, ...layer, config, updatedAt });
    this.options.logger.info({ ...layer, terminals: terminals.length }, 'configuration layer set');
    // Every terminal it reaches gets it, also those beyond the ones listed in the answer.
    for (const terminal of terminals) {
      this.options.publish(terminal.id, await this.desired(terminal));
    }
    return this.answer({ config, updatedAt }, await this.views(terminals));
  }

  async get(principal: Principal, scope: ConfigScope): Promise<FleetConfigResponse> {
    const { accountId, layer, terminals } = await this.resolve(principal, scope);
    const stored = await this.options.store.getConfigLayer(accountId, layer.scope, layer.scopeId);
    return this.answer(stored, await this.views(terminals));
  }

  /** The terminal's effective configuration and its version. */
  async desired(terminal: TerminalRecord): Promise<ConfigMessage> {
    const { store } = this.options;
    const [account, cohort, own] = await Promise.all([
      store.getConfigLayer(terminal.accountId, 'account', ''),
      terminal.cohort
        ? store.getConfigLayer(terminal.accountId, 'cohort', terminal.cohort)
        : undefined,
      store.getConfigLayer(terminal.accountId, 'terminal', terminal.id),
    ]);
    const config = effectiveFleetConfig([account?.config, cohort?.config, own?.config]);
    return { version: configVersion(config), config };
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

  /** The layer a scope names and the terminals it reaches; an account credential only. */
  private async resolve(
    principal: Principal,
    scope: ConfigScope,
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
