/**
 * The SQLite store's fleet (ports/fleet.ts): layers of desired configuration (the
 * relay-wide one and which settings merchants may set among them), what agents
 * last said of themselves and releases here, pairings in sqlite-pairings.ts, rollouts in
 * sqlite-rollouts.ts. Writes run in the writer's shared commit (sqlite-writes.ts); reads
 * on the relay thread's connection.
 */
import type Database from 'better-sqlite3';
import type { FleetConfig, FleetSettingName } from '../../protocol/index.js';
import type { FleetStore } from './ports/fleet.js';
import type { ConfigLayerRecord, FleetReportRecord, ReleaseRecord } from './records.js';
import {
  FLEET_SQL,
  layerValues,
  reportValues,
  toConfigLayer,
  toFleetReport,
  toRelayFleetConfig,
  type LayerRow,
  type RelayFleetConfigRow,
  type ReportRow,
} from './fleet-rows.js';
import { RELEASE_COLUMNS, releaseValues, toRelease, type ReleaseRow } from './rows.js';
import { pairingReads, type pairingWrites } from './sqlite-pairings.js';
import { rolloutReads, type rolloutWrites } from './sqlite-rollouts.js';
import type { QueuesWrites } from './sqlite-write-steps.js';

/**
 * FleetStore.adoptReleases: a release moves unless the account has its version and arch
 * already, or another account published them earlier.
 */
const ADOPT_RELEASES_SQL = `
  UPDATE releases SET account_id = @accountId
  WHERE account_id <> @accountId AND NOT EXISTS (
    SELECT 1 FROM releases AS other
    WHERE other.version = releases.version AND other.arch = releases.arch
      AND (other.account_id = @accountId
        OR other.published_at < releases.published_at
        OR (other.published_at = releases.published_at AND other.account_id < releases.account_id)))`;

/** The writes, as operations the writer thread runs. */
export function fleetWrites(db: Database.Database) {
  const putLayer = db.prepare(FLEET_SQL.putLayer);
  const putReport = db.prepare(FLEET_SQL.putReport);
  const putRelayLayer = db.prepare(FLEET_SQL.putRelayLayer);
  const putMerchantSettings = db.prepare(FLEET_SQL.putMerchantSettings);
  return {
    putConfigLayer(layer: ConfigLayerRecord): void {
      putLayer.run(layerValues(layer));
    },
    putRelayConfigLayer({ config, updatedAt }: { config: FleetConfig; updatedAt: string }): void {
      putRelayLayer.run(JSON.stringify(config), updatedAt);
    },
    putMerchantSettings(arg: { settings: FleetSettingName[]; updatedAt: string }): void {
      putMerchantSettings.run(JSON.stringify(arg.settings), arg.updatedAt);
    },
    putFleetReport(report: FleetReportRecord): void {
      // A terminal deleted meanwhile: nothing to keep its report for.
      const known = db.prepare('SELECT 1 FROM terminals WHERE id = ?').get(report.terminalId);
      if (known) putReport.run(reportValues(report));
    },
    addRelease(r: ReleaseRecord): boolean {
      const { changes } = db
        .prepare(
          `INSERT INTO releases (${RELEASE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT DO NOTHING`,
        )
        .run(...releaseValues(r));
      return changes === 1;
    },
    adoptReleases(accountId: string): number {
      const { changes } = db.prepare(ADOPT_RELEASES_SQL).run({ accountId });
      return changes;
    },
  };
}

/** The reads. */
export function fleetReads(db: Database.Database) {
  const getLayer = db.prepare<[string, string, string], LayerRow>(FLEET_SQL.getLayer);
  const reports = db.prepare<[string], ReportRow>(FLEET_SQL.reports);
  const relay = db.prepare<[], RelayFleetConfigRow>(FLEET_SQL.getRelay);
  return {
    getRelayFleetConfig() {
      return toRelayFleetConfig(relay.get());
    },
    getConfigLayer(accountId: string, scope: ConfigLayerRecord['scope'], scopeId: string) {
      const row = getLayer.get(accountId, scope, scopeId);
      return row ? toConfigLayer(row) : undefined;
    },
    fleetReports(terminalId: string): FleetReportRecord[] {
      return reports.all(terminalId).map(toFleetReport);
    },
  };
}

type FleetWrites = ReturnType<typeof fleetWrites> &
  ReturnType<typeof pairingWrites> &
  ReturnType<typeof rolloutWrites>;

/** The port, its reads here and its writes queued to the writer. */
export function sqliteFleet(db: Database.Database, writer: QueuesWrites<FleetWrites>): FleetStore {
  const fleet = fleetReads(db);
  const pairings = pairingReads(db);
  const rollouts = rolloutReads(db);
  return {
    createPairing: (pairing) => writer.write({ op: 'createPairing', arg: pairing }),

    async findPairing(secretHash) {
      return pairings.findPairing(secretHash);
    },

    claimPairing: (code, claim, terminal, event) =>
      writer.write({ op: 'claimPairing', arg: { code, claim, terminal, event } }),

    collectPairing: (secretHash, agentSecretHash, at) =>
      writer.write({ op: 'collectPairing', arg: { secretHash, agentSecretHash, at } }),

    addRelease: (release) => writer.write({ op: 'addRelease', arg: release }),

    async findRelease(accountId, version, arch) {
      const row = db
        .prepare<[string, string, string], ReleaseRow>(
          'SELECT * FROM releases WHERE account_id = ? AND version = ? AND arch = ?',
        )
        .get(accountId, version, arch);
      return row ? toRelease(row) : undefined;
    },

    adoptReleases: (accountId) => writer.write({ op: 'adoptReleases', arg: accountId }),

    async listReleases(accountId) {
      return db
        .prepare<[string], ReleaseRow>(
          'SELECT * FROM releases WHERE account_id = ? ORDER BY published_at DESC, version DESC',
        )
        .all(accountId)
        .map(toRelease);
    },

    putConfigLayer: (layer) => writer.write({ op: 'putConfigLayer', arg: layer }),

    async getConfigLayer(accountId, scope, scopeId) {
      return fleet.getConfigLayer(accountId, scope, scopeId);
    },

    async getRelayFleetConfig() {
      return fleet.getRelayFleetConfig();
    },

    putRelayConfigLayer: (config, updatedAt) =>
      writer.write({ op: 'putRelayConfigLayer', arg: { config, updatedAt } }),

    putMerchantSettings: (settings, updatedAt) =>
      writer.write({ op: 'putMerchantSettings', arg: { settings, updatedAt } }),

    putFleetReport: (report) => writer.write({ op: 'putFleetReport', arg: report }),

    async fleetReports(terminalId) {
      return fleet.fleetReports(terminalId);
    },

    createRollout: (rollout) => writer.write({ op: 'createRollout', arg: rollout }),

    async getRollout(id) {
      return rollouts.getRollout(id);
    },

    async listRollouts(filter) {
      return rollouts.listRollouts(filter);
    },

    updateRollout: (rollout, revision) =>
      writer.write({ op: 'updateRollout', arg: { rollout, revision } }),

    recordRolloutOutcome: (rolloutId, terminalId, outcome) =>
      writer.write({ op: 'recordRolloutOutcome', arg: { rolloutId, terminalId, ...outcome } }),

    async cohortTerminals(accountId, cohort) {
      return rollouts.cohortTerminals(accountId, cohort);
    },
  };
}
