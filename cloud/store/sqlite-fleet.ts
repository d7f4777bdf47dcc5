/**
 * The SQLite store's fleet tables: layers of desired configuration and what agents last
 * said of themselves (Store.putConfigLayer, putFleetReport). Writes run in the writer's
 * shared commit (sqlite-writes.ts); reads on the relay thread's connection.
 */
import type Database from 'better-sqlite3';
import type { ConfigLayerRecord, FleetReportRecord } from './records.js';
import {
  FLEET_SQL,
  layerValues,
  reportValues,
  toConfigLayer,
  toFleetReport,
  type LayerRow,
  type ReportRow,
} from './fleet-rows.js';

/** The writes, as operations the writer thread runs. */
export function fleetWrites(db: Database.Database) {
  const putLayer = db.prepare(FLEET_SQL.putLayer);
  const putReport = db.prepare(FLEET_SQL.putReport);
  return {
    putConfigLayer(layer: ConfigLayerRecord): void {
      putLayer.run(layerValues(layer));
    },
    putFleetReport(report: FleetReportRecord): void {
      // A terminal deleted meanwhile: nothing to keep its report for.
      const known = db.prepare('SELECT 1 FROM terminals WHERE id = ?').get(report.terminalId);
      if (known) putReport.run(reportValues(report));
    },
  };
}

/** The reads. */
export function fleetReads(db: Database.Database) {
  const getLayer = db.prepare<[string, string, string], LayerRow>(FLEET_SQL.getLayer);
  const reports = db.prepare<[string], ReportRow>(FLEET_SQL.reports);
  return {
    getConfigLayer(accountId: string, scope: ConfigLayerRecord['scope'], scopeId: string) {
      const row = getLayer.get(accountId, scope, scopeId);
      return row ? toConfigLayer(row) : undefined;
    },
    fleetReports(terminalId: string): FleetReportRecord[] {
      return reports.all(terminalId).map(toFleetReport);
    },
  };
}
