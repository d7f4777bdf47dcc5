/**
 * A terminal's desired configuration, set from the cloud (docs/fleet.md, "Configuration"):
 * a relay-wide layer (the operator's), then layers per account, per cohort and per
 * terminal, every field optional in a layer. The effective configuration is the relay's
 * layer, overlaid by the account's, the cohort's, then the terminal's; its `version`
 * changes exactly when it does. The relay pushes it to the
 * agent, which applies it (at once, or when idle for what drives hardware) and reports
 * back what it did with that version.
 */
import { z } from 'zod';
import { AccountId } from './accounts.js';
import { CohortId } from './events.js';
import { TerminalId, TimestampV1 } from './fields.js';
import { LocalApiConfig, mergeLocalApi } from './local-api.js';
import { plainText } from './plain-text.js';

export const FleetLogLevel = z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']);

/** `HH:MM`, 24-hour, UTC. */
const TimeOfDay = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be HH:MM (UTC, 00:00-23:59)');

/**
 * When the terminal may be disturbed for maintenance (updates), in UTC; a window whose end
 * is before its start runs over midnight.
 */
export const MaintenanceWindow = z
  .strictObject({ start: TimeOfDay, end: TimeOfDay })
  .refine((w) => w.start !== w.end, 'start and end must differ');

/**
 * The card reader's settings a fleet may change: its line speed, and for a ZVT terminal
 * the vendor profile. Where the reader is, and its password, stay in the agent's file.
 * The agent refuses what its reader does not take (a profile for a native reader).
 */
export const FleetReaderSettings = z.strictObject({
  baud_rate: z.int().min(1200).max(4_000_000).optional(),
  profile: z
    .string()
    .regex(/^[a-z][a-z0-9-]{0,31}$/, 'must be a profile name, e.g. "generic"')
    .optional(),
});

/** An IANA time zone name the platform knows (`Europe/Berlin`, `UTC`). */
export const TimeZoneName = z
  .string()
  .min(1)
  .max(64)
  .refine((name) => {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: name });
      return true;
    } catch {
      return false;
    }
  }, 'must be an IANA time zone name, e.g. "Europe/Berlin"');

/**
 * When the terminal closes its day (end-of-day, docs/zvt.md): a daily local time in the
 * terminal's time zone, or `off`. Defaults: 03:00 for a ZVT terminal, off for the native
 * reader; the agent host's time zone.
 */
export const EndOfDaySchedule = z.strictObject({
  at: z
    .union([
      z.literal('off'),
      z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be HH:MM (local, 00:00-23:59) or "off"'),
    ])
    .optional(),
  time_zone: TimeZoneName.optional(),
});
export type EndOfDaySchedule = z.infer<typeof EndOfDaySchedule>;

/** No control characters: the text goes to a display and into logs. */
const DisplayText = z
  .string()
  .max(64)
  .regex(/^[^\p{Cc}]*$/u, 'must not contain control characters');

/** One layer; the effective configuration has the same shape. */
export const FleetConfig = z.strictObject({
  /** Seconds between status heartbeats. */
  heartbeat_s: z.int().min(1).max(3600).optional(),
  log_level: FleetLogLevel.optional(),
  /** Dots per line of the receipt printer's head: 384 (58 mm), 576 (80 mm). */
  printer_head_width: z
    .int()
    .min(8)
    .max(2048)
    .refine((w) => w % 8 === 0, 'must be a multiple of 8 dots')
    .optional(),
  /** What the terminal shows while it waits for a payment. */
  idle_screen_text: DisplayText.optional(),
  reader: FleetReaderSettings.optional(),
  maintenance_window: MaintenanceWindow.optional(),
  end_of_day: EndOfDaySchedule.optional(),
  /** Local mode: the POS API served by the agent on the shop's network (protocol/local-api.ts). */
  local_api: LocalApiConfig.optional(),
});
export type FleetConfig = z.infer<typeof FleetConfig>;

/** A top-level setting of FleetConfig: what the operator lets merchants set, or not. */
export const FleetSettingName = FleetConfig.keyof();
export type FleetSettingName = z.infer<typeof FleetSettingName>;
export const FLEET_SETTING_NAMES: readonly FleetSettingName[] = FleetSettingName.options;

/** The effective configuration: the layers from the widest to the narrowest. */
export function effectiveFleetConfig(layers: ReadonlyArray<FleetConfig | undefined>): FleetConfig {
  const merged: FleetConfig = {};
  for (const layer of layers) {
    if (!layer) continue;
    const { reader, end_of_day: endOfDay, local_api: localApi, ...rest } = layer;
    Object.assign(merged, rest);
    if (reader) merged.reader = { ...merged.reader, ...reader };
    if (endOfDay) merged.end_of_day = { ...merged.end_of_day, ...endOfDay };
    if (localApi) merged.local_api = mergeLocalApi(merged.local_api, localApi);
  }
  return merged;
}

/** A version names one effective configuration (a hash of it, made by the relay). */
export const FleetConfigVersion = z.string().regex(/^[0-9a-f]{16}$/);

/** relay → agent, retained: the terminal's effective configuration. */
export const ConfigMessage = z.object({
  version: FleetConfigVersion,
  config: FleetConfig,
});
export type ConfigMessage = z.infer<typeof ConfigMessage>;

/**
 * What the agent did with the newest configuration it received: APPLIED (in force),
 * PENDING (waiting for the terminal to be idle), REJECTED (not applied: `reason`; the
 * configuration of `applied_version` stays in force).
 */
export const ConfigApplyStatus = z.enum(['APPLIED', 'PENDING', 'REJECTED']);

/** agent → relay, retained: its answer to the newest configuration it received. */
export const ConfigReportMessage = z.object({
  version: FleetConfigVersion,
  status: ConfigApplyStatus,
  reason: plainText(500).optional(),
  /** The version in force; absent while none from the relay ever was. */
  applied_version: FleetConfigVersion.optional(),
  at: TimestampV1,
});
export type ConfigReportMessage = z.infer<typeof ConfigReportMessage>;

/** Which layer an operation reads or writes: exactly one of the four. */
export const ConfigScope = z.union([
  z.strictObject({ terminal_id: TerminalId }),
  z.strictObject({ cohort: CohortId }),
  z.strictObject({ account: z.literal(true) }),
  /** The relay-wide layer under every account's: the operator's, named by no account_id. */
  z.strictObject({ relay: z.literal(true) }),
]);
export type ConfigScope = z.infer<typeof ConfigScope>;

export const FleetConfigSetRequest = z.object({
  /**
   * The account acted for: the operator names one; an account's own credential may name
   * itself. None with the relay scope.
   */
  account_id: AccountId.optional(),
  scope: ConfigScope,
  /** The whole layer: fields left out are no longer set at this level ({} clears it). */
  config: FleetConfig,
});
export type FleetConfigSetRequest = z.infer<typeof FleetConfigSetRequest>;

export const FleetConfigGetRequest = z.object({
  /**
   * The account acted for: the operator names one; an account's own credential may name
   * itself. None with the relay scope.
   */
  account_id: AccountId.optional(),
  scope: ConfigScope,
});
export type FleetConfigGetRequest = z.infer<typeof FleetConfigGetRequest>;

/** A terminal's desired configuration, what its agent reported, and whether they agree. */
export const TerminalConfigView = z.object({
  terminal_id: TerminalId,
  desired: z.object({ version: FleetConfigVersion, config: FleetConfig }),
  reported: ConfigReportMessage.nullable(),
  /** The agent applied exactly the desired version. */
  in_sync: z.boolean(),
});
export type TerminalConfigView = z.infer<typeof TerminalConfigView>;

export const FleetConfigResponse = z.object({
  /** The layer asked for, as stored ({} when none is set). */
  layer: FleetConfig,
  /** When the layer was last set (ISO 8601 with milliseconds, in both revisions); null: never. */
  changed_at: z.string().nullable(),
  /**
   * The terminals the layer reaches, at most 1,000 (the first by id; for the relay's
   * layer, by account id, then terminal id).
   */
  terminals: z.array(TerminalConfigView),
});
export type FleetConfigResponse = z.infer<typeof FleetConfigResponse>;

/**
 * Which top-level settings merchants may set in their own layers (the operator's; docs/
 * fleet.md, "Which settings merchants may set"). Each name once; [] lets them set none.
 */
export const MerchantSettingsSetRequest = z.strictObject({
  settings: z
    .array(FleetSettingName)
    .max(FLEET_SETTING_NAMES.length)
    .refine((names) => new Set(names).size === names.length, 'must name each setting once'),
});
export type MerchantSettingsSetRequest = z.infer<typeof MerchantSettingsSetRequest>;

export const MerchantSettingsResponse = z.object({
  /** The settings merchants may set, in FleetConfig's order. */
  settings: z.array(FleetSettingName),
  /** When the operator last set the list; null: never, and merchants may set every setting. */
  changed_at: z.string().nullable(),
});
export type MerchantSettingsResponse = z.infer<typeof MerchantSettingsResponse>;
