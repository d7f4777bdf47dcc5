/**
 * The fleet tables' rows as both stores read them, and the statements both use (SQLite's
 * placeholders; postgres/fleet.ts numbers them): layers of desired configuration and what
 * agents last said of themselves.
 */
import type { ConfigLayerRecord, FleetReportRecord } from './records.js';

export interface LayerRow {
  account_id: string;
  scope: ConfigLayerRecord['scope'];
  scope_id: string;
  body: string;
  updated_at: string;
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
});

export const toFleetReport = (row: ReportRow): FleetReportRecord => ({
  terminalId: row.terminal_id,
  kind: row.kind,
  body: JSON.parse(row.body),
  receivedAt: row.received_at,
});

/** Both stores' statements (placeholders aside): an upsert each. */
export const FLEET_SQL = {
  putLayer: `INSERT INTO config_layers (account_id, scope, scope_id, body, updated_at) VALUES (?, ?, ?, ?, ?)
     ON CONFLICT (account_id, scope, scope_id) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at`,
  getLayer: 'SELECT * FROM config_layers WHERE account_id = ? AND scope = ? AND scope_id = ?',
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
];

export const reportValues = (r: FleetReportRecord) => [
  r.terminalId,
  r.kind,
  JSON.stringify(r.body),
  r.receivedAt,
];
