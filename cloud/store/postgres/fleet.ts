/**
 * The PostgreSQL store's fleet tables (Store.putConfigLayer, putFleetReport): the same
 * statements as SQLite's (../fleet-rows.ts) with PostgreSQL's placeholders.
 */
import type pg from 'pg';
import type { ConfigLayerRecord, FleetReportRecord } from '../records.js';
import {
  FLEET_SQL,
  layerValues,
  reportValues,
  toConfigLayer,
  toFleetReport,
  type LayerRow,
  type ReportRow,
} from '../fleet-rows.js';

/** `?` placeholders numbered as PostgreSQL wants them. */
const numbered = (sql: string) => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};

const SQL = {
  putLayer: numbered(FLEET_SQL.putLayer),
  getLayer: numbered(FLEET_SQL.getLayer),
  // A terminal deleted meanwhile: nothing to keep its report for.
  putReport: numbered(FLEET_SQL.putReport).replace(
    'VALUES ($1, $2, $3, $4)',
    'SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM terminals WHERE id = $1)',
  ),
  reports: numbered(FLEET_SQL.reports),
};

export async function putConfigLayer(pool: pg.Pool, layer: ConfigLayerRecord): Promise<void> {
  await pool.query(SQL.putLayer, layerValues(layer));
}

export async function getConfigLayer(
  pool: pg.Pool,
  accountId: string,
  scope: ConfigLayerRecord['scope'],
  scopeId: string,
): Promise<ConfigLayerRecord | undefined> {
  const { rows } = await pool.query<LayerRow>(SQL.getLayer, [accountId, scope, scopeId]);
  return rows[0] ? toConfigLayer(rows[0]) : undefined;
}

export async function putFleetReport(pool: pg.Pool, report: FleetReportRecord): Promise<void> {
  await pool.query(SQL.putReport, reportValues(report));
}

export async function fleetReports(
  pool: pg.Pool,
  terminalId: string,
): Promise<FleetReportRecord[]> {
  const { rows } = await pool.query<ReportRow>(SQL.reports, [terminalId]);
  return rows.map(toFleetReport);
}
