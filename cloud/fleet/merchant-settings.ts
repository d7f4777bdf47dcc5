/**
 * Which settings merchants may set in their own layers of configuration (docs/fleet.md,
 * "Which settings merchants may set"): the operator's list, what of an account's layer
 * counts under it, and what a merchant's write of a layer may change.
 */
import { isDeepStrictEqual } from 'node:util';
import {
  FLEET_SETTING_NAMES,
  type FleetConfig,
  type FleetSettingName,
} from '../../protocol/index.js';
import { ApiError } from '../errors.js';
import type { ConfigLayerRecord } from '../store/records.js';

/** The stored list as a set; never narrowed (null): every setting, as before there was one. */
export function merchantSettingSet(
  stored: readonly FleetSettingName[] | null,
): ReadonlySet<FleetSettingName> {
  return new Set(stored ?? FLEET_SETTING_NAMES);
}

/** The list in FleetConfig's order, as the API answers it. */
export function inSettingOrder(settings: Iterable<FleetSettingName>): FleetSettingName[] {
  const given = new Set(settings);
  return FLEET_SETTING_NAMES.filter((name) => given.has(name));
}

const settingsOf = (config: FleetConfig) => Object.keys(config) as FleetSettingName[];

/**
 * What of an account's layer counts in the effective configuration: a setting merchants
 * may set, or one the operator gave. The rest stays stored and counts again once the
 * operator lets merchants set it.
 */
export function countedLayer(
  layer: ConfigLayerRecord | undefined,
  allowed: ReadonlySet<FleetSettingName>,
): FleetConfig | undefined {
  if (!layer) return undefined;
  const operators = new Set(layer.operatorSettings);
  const counted: Record<string, unknown> = {};
  for (const name of settingsOf(layer.config)) {
    if (allowed.has(name) || operators.has(name)) counted[name] = layer.config[name];
  }
  return counted as FleetConfig;
}

/**
 * Refuses (403, naming them) a merchant's layer that adds, changes or removes a setting
 * merchants may not set. Sent back as the layer holds it, it is no change: a merchant's
 * tools send the whole layer they read.
 */
export function refuseSettingsNotMerchants(
  before: FleetConfig,
  after: FleetConfig,
  allowed: ReadonlySet<FleetSettingName>,
): void {
  const changed = FLEET_SETTING_NAMES.filter(
    (name) => !allowed.has(name) && !isDeepStrictEqual(before[name], after[name]),
  );
  if (changed.length === 0) return;
  throw new ApiError(
    'FORBIDDEN',
    `merchants may not set ${changed.join(', ')} on this relay (the operator decides ${changed.length === 1 ? 'it' : 'them'}); nothing was stored`,
  );
}

/**
 * The settings of a layer about to be stored that the operator gave: those the writer
 * gives or changes are the writer's, and one left as it was keeps who gave it.
 */
export function operatorSettingsAfter(
  stored: ConfigLayerRecord | undefined,
  config: FleetConfig,
  byOperator: boolean,
): FleetSettingName[] {
  const before = stored?.config ?? {};
  const operators = new Set(stored?.operatorSettings ?? []);
  return inSettingOrder(
    settingsOf(config).filter((name) =>
      isDeepStrictEqual(before[name], config[name]) ? operators.has(name) : byOperator,
    ),
  );
}
