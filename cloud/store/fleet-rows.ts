/**
 * The fleet tables' rows as both stores read them, and the statements both use (SQLite's
 * placeholders; postgres/fleet.ts numbers them): layers of desired configuration, the
 * relay-wide one and which settings merchants may set, and what agents last said of
 * themselves.
 */
import type { FleetConfig, FleetSettingName } from '../../protocol/index.js';
import type { ConfigLayerRecord, FleetReportRecord, RelayFleetConfigRecord } from './records.js';

export interface LayerRow {
  account_id: string;
  scope: ConfigLayerRecord['scope'];
  scope_id: string;
  body: string;
  updated_at: string;
  operator_settings: string;
}

/** The one row of `relay_fleet_config`, when either of its halves was ever set. */
export interface RelayFleetConfigRow {
  layer: string;
  layer_updated_at: string | null;
  merchant_settings: string | null;
  merchant_settings_updated_at: string | null;
}

export interface ReportRow {
  terminal_id: string;
  kind: FleetReportRecord['kind'];
  body: string;
  received_at: string;
}

export const toConfigLayer = (row: LayerRow): ConfigLayerRecord => ({
  accountId: row.account_id,
  scope: row.scope,
  scopeId: row.scope_id,
  config: JSON.parse(row.body),
  updatedAt: row.updated_at,
  operatorSettings: JSON.parse(row.operator_settings),
});

export const toRelayFleetConfig = (
  row: RelayFleetConfigRow | undefined,
): RelayFleetConfigRecord => ({
  layer: row ? (JSON.parse(row.layer) as FleetConfig) : {},
  layerUpdatedAt: row?.layer_updated_at ?? null,
  merchantSettings: row?.merchant_settings
    ? (JSON.parse(row.merchant_settings) as FleetSettingName[])
    : null,
  merchantSettingsUpdatedAt: row?.merchant_settings_updated_at ?? null,
});

export const toFleetReport = (row: ReportRow): FleetReportRecord => ({
  terminalId: row.terminal_id,
  kind: row.kind,
  body: JSON.parse(row.body),
  receivedAt: row.received_at,
});

/** Both stores' statements (placeholders aside): an upsert each. */
export const FLEET_SQL = {
  putLayer: `INSERT INTO config_layers (account_id, scope, scope_id, body, updated_at, operator_settings)
     VALUES (?, ?, ?, ?, ?, ?)
     ON CONFLICT (account_id, scope, scope_id) DO UPDATE SET body = excluded.body,
       updated_at = excluded.updated_at, operator_settings = excluded.operator_settings`,
  getLayer: 'SELECT * FROM config_layers WHERE account_id = ? AND scope = ? AND scope_id = ?',
  // One row (id 1): each half is replaced on its own, the other kept.
  putRelayLayer: `INSERT INTO relay_fleet_config (id, layer, layer_updated_at) VALUES (1, ?, ?)
     ON CONFLICT (id) DO UPDATE SET layer = excluded.layer, layer_updated_at = excluded.layer_updated_at`,
  putMerchantSettings: `INSERT INTO relay_fleet_config (id, merchant_settings, merchant_settings_updated_at)
     VALUES (1, ?, ?)
     ON CONFLICT (id) DO UPDATE SET merchant_settings = excluded.merchant_settings,
       merchant_settings_updated_at = excluded.merchant_settings_updated_at`,
  getRelay: 'SELECT * FROM relay_fleet_config WHERE id = 1',
  putReport: `INSERT INTO fleet_reports (terminal_id, kind, body, received_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (terminal_id, kind) DO UPDATE SET body = excluded.body, received_at = excluded.received_at`,
  reports: 'SELECT * FROM fleet_reports WHERE terminal_id = ? ORDER BY kind',
} as const;

export const layerValues = (l: ConfigLayerRecord) => [
  l.accountId,
  l.scope,
  l.scopeId,
  JSON.stringify(l.config),
  l.updatedAt,
  JSON.stringify(l.operatorSettings),
];

export const reportValues = (r: FleetReportRecord) => [
  r.terminalId,
  r.kind,
  JSON.stringify(r.body),
  r.receivedAt,
];
