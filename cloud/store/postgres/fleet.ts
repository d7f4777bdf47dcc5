/**
 * The PostgreSQL store's fleet (ports/fleet.ts): its tables of desired configuration and
 * what agents last said here, the same statements as SQLite's (../fleet-rows.ts) with
 * PostgreSQL's placeholders; pairings, releases and rollouts in their modules.
 */
import type pg from 'pg';
import type { FleetConfig, FleetSettingName } from '../../../protocol/index.js';
import type { ChangeNotice } from '../../cluster/change-bus.js';
import type { FleetStore } from '../ports/fleet.js';
import type {
  ConfigLayerRecord,
  FleetReportRecord,
  NewEvent,
  PairingClaimOutcome,
  PairingRecord,
  RelayFleetConfigRecord,
  ReleaseRecord,
  RolloutRecord,
  TerminalRecord,
} from '../records.js';
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
} from '../fleet-rows.js';
import type { WithClient } from './connection.js';
import * as pairings from './pairings.js';
import * as releases from './releases.js';
import * as rollouts from './rollouts.js';

/** `?` placeholders numbered as PostgreSQL wants them. */
const numbered = (sql: string) => {
  let n = 0;
  return sql.replace(/\?/g, () => `$${++n}`);
};

const SQL = {
  putLayer: numbered(FLEET_SQL.putLayer),
  getLayer: numbered(FLEET_SQL.getLayer),
  putRelayLayer: numbered(FLEET_SQL.putRelayLayer),
  putMerchantSettings: numbered(FLEET_SQL.putMerchantSettings),
  getRelay: FLEET_SQL.getRelay,
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

export async function getRelayFleetConfig(pool: pg.Pool): Promise<RelayFleetConfigRecord> {
  const { rows } = await pool.query<RelayFleetConfigRow>(SQL.getRelay);
  return toRelayFleetConfig(rows[0]);
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

/**
 * The port. `notice` makes the change bus's notice of a commit, sent inside it (a claim's
 * event; change-bus.ts).
 */
export function postgresFleet(
  pool: pg.Pool,
  withClient: WithClient,
  notice: (change: ChangeNotice) => string,
): FleetStore {
  return {
    createPairing(pairing: PairingRecord): Promise<boolean> {
      return pairings.createPairing(pool, pairing);
    },

    findPairing(secretHash: string): Promise<PairingRecord | undefined> {
      return pairings.findPairing(pool, secretHash);
    },

    claimPairing(
      code: string,
      claim: NonNullable<PairingRecord['claim']>,
      terminal: TerminalRecord,
      event: NewEvent,
    ): Promise<PairingClaimOutcome> {
      return withClient((client) =>
        pairings.claimPairing(client, (change) => notice(change), {
          code,
          claim,
          terminal,
          event,
        }),
      );
    },

    collectPairing(secretHash: string, agentSecretHash: string, at: string): Promise<boolean> {
      return withClient((client) =>
        pairings.collectPairing(client, { secretHash, agentSecretHash, at }),
      );
    },

    addRelease(release: ReleaseRecord): Promise<boolean> {
      return releases.addRelease(pool, release);
    },

    findRelease(
      accountId: string,
      version: string,
      arch: string,
    ): Promise<ReleaseRecord | undefined> {
      return releases.findRelease(pool, accountId, version, arch);
    },

    listReleases(accountId: string): Promise<ReleaseRecord[]> {
      return releases.listReleases(pool, accountId);
    },

    adoptReleases(accountId: string): Promise<number> {
      return releases.adoptReleases(pool, accountId);
    },

    putConfigLayer(layer: ConfigLayerRecord): Promise<void> {
      return putConfigLayer(pool, layer);
    },

    getConfigLayer(
      accountId: string,
      scope: ConfigLayerRecord['scope'],
      scopeId: string,
    ): Promise<ConfigLayerRecord | undefined> {
      return getConfigLayer(pool, accountId, scope, scopeId);
    },

    getRelayFleetConfig(): Promise<RelayFleetConfigRecord> {
      return getRelayFleetConfig(pool);
    },

    async putRelayConfigLayer(config: FleetConfig, updatedAt: string): Promise<void> {
      await pool.query(SQL.putRelayLayer, [JSON.stringify(config), updatedAt]);
    },

    async putMerchantSettings(settings: FleetSettingName[], updatedAt: string): Promise<void> {
      await pool.query(SQL.putMerchantSettings, [JSON.stringify(settings), updatedAt]);
    },

    putFleetReport(report: FleetReportRecord): Promise<void> {
      return putFleetReport(pool, report);
    },

    fleetReports(terminalId: string): Promise<FleetReportRecord[]> {
      return fleetReports(pool, terminalId);
    },

    createRollout(rollout: RolloutRecord): Promise<void> {
      return withClient((client) => rollouts.createRollout(client, rollout));
    },

    getRollout(id: string): Promise<RolloutRecord | undefined> {
      return rollouts.getRollout(pool, id);
    },

    listRollouts(filter: {
      accountId?: string;
      state?: RolloutRecord['state'];
    }): Promise<RolloutRecord[]> {
      return rollouts.listRollouts(pool, filter);
    },

    updateRollout(rollout: RolloutRecord, revision: number): Promise<boolean> {
      return withClient((client) => rollouts.updateRollout(client, rollout, revision));
    },

    recordRolloutOutcome(
      rolloutId: string,
      terminalId: string,
      outcome: { result: string; reason?: string; at: string },
    ): Promise<boolean> {
      return rollouts.recordRolloutOutcome(pool, rolloutId, terminalId, outcome);
    },

    cohortTerminals(
      accountId: string,
      cohort: string,
    ): Promise<Array<{ id: string; connected: boolean }>> {
      return rollouts.cohortTerminals(pool, accountId, cohort);
    },
  };
}
