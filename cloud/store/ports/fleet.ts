/**
 * The store's fleet: pairings by a code, releases, layers of desired configuration, what
 * agents last said of themselves, and rollouts of releases to cohorts.
 */
import type { FleetConfig, FleetSettingName } from '../../../protocol/index.js';
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

export interface FleetStore {
  /**
   * Stores a new pairing unless its code is taken (answers false: draw another). Pairings
   * that expired more than a day before it are deleted on the way.
   */
  createPairing(pairing: PairingRecord): Promise<boolean>;
  findPairing(secretHash: string): Promise<PairingRecord | undefined>;
  /**
   * Claims the pairing of `code` at `claim.claimedAt` if it is unclaimed and not expired,
   * and in the same commit creates the terminal and appends the event. Any other outcome
   * changes nothing.
   *
   * Commits across ports (the pairing, TerminalStore's terminal, EventStore's event) in
   * one transaction: a claim that made no terminal, or a terminal whose claim another
   * won, would pair a till twice or not at all.
   */
  claimPairing(
    code: string,
    claim: NonNullable<PairingRecord['claim']>,
    terminal: TerminalRecord,
    event: NewEvent,
  ): Promise<PairingClaimOutcome>;
  /**
   * The agent's one collection of a claimed pairing: marks it collected at `at` and stores
   * the terminal's broker credential, in one commit. A pairing unclaimed or collected
   * before (by any process) answers false and changes nothing.
   *
   * Commits across ports (the pairing and AccountStore's agent credential) in one
   * transaction, so that only the one collection that counts leaves a credential.
   */
  collectPairing(secretHash: string, agentSecretHash: string, at: string): Promise<boolean>;

  /** Stores a release unless the account has that version for that arch (answers false). */
  addRelease(release: ReleaseRecord): Promise<boolean>;
  findRelease(accountId: string, version: string, arch: string): Promise<ReleaseRecord | undefined>;
  /** The account's releases, newest published first. */
  listReleases(accountId: string): Promise<ReleaseRecord[]>;
  /**
   * Makes the releases other accounts published `accountId`'s, in one commit: how a store
   * of releases published by merchant accounts becomes the operator's (docs/tenants.md).
   * Of several accounts' releases of one version and arch, only the earliest published
   * moves (versions are published once); the others stay where they were, reached by
   * nobody. Answers how many moved; a second call moves none.
   */
  adoptReleases(accountId: string): Promise<number>;
  /** Replaces a layer of desired configuration (protocol/fleet-config.ts). */
  putConfigLayer(layer: ConfigLayerRecord): Promise<void>;
  getConfigLayer(
    accountId: string,
    scope: ConfigLayerRecord['scope'],
    scopeId: string,
  ): Promise<ConfigLayerRecord | undefined>;
  /** The relay-wide layer and which settings merchants may set: defaults when never set. */
  getRelayFleetConfig(): Promise<RelayFleetConfigRecord>;
  /** Replaces the relay-wide layer of desired configuration; the merchants' list stays. */
  putRelayConfigLayer(config: FleetConfig, updatedAt: string): Promise<void>;
  /** Replaces which settings merchants may set; the relay-wide layer stays. */
  putMerchantSettings(settings: FleetSettingName[], updatedAt: string): Promise<void>;
  /**
   * Keeps what a terminal's agent last said on a fleet topic, replacing what it said
   * before of the same kind; a terminal that does not exist is left alone.
   */
  putFleetReport(report: FleetReportRecord): Promise<void>;
  /** What the terminal's agent last said, one record per kind. */
  fleetReports(terminalId: string): Promise<FleetReportRecord[]>;

  /**
   * Stores a new rollout; in the same commit, the running or paused rollouts of its
   * account's cohort become superseded by it.
   */
  createRollout(rollout: RolloutRecord): Promise<void>;
  getRollout(id: string): Promise<RolloutRecord | undefined>;
  /** Newest first: an account's, or those in one state, or both. */
  listRollouts(filter: {
    accountId?: string;
    state?: RolloutRecord['state'];
  }): Promise<RolloutRecord[]>;
  /**
   * Writes the rollout's state and the terminals it has not written yet, if its revision
   * is still `revision` (else answers false and changes nothing); the revision goes up by one.
   */
  updateRollout(rollout: RolloutRecord, revision: number): Promise<boolean>;
  /** Keeps how a terminal's update ended; false when the rollout never ordered that terminal. */
  recordRolloutOutcome(
    rolloutId: string,
    terminalId: string,
    outcome: { result: string; reason?: string; at: string },
  ): Promise<boolean>;
  /** The terminals of an account's cohort, oldest id first, and whether each is connected. */
  cohortTerminals(
    accountId: string,
    cohort: string,
  ): Promise<Array<{ id: string; connected: boolean }>>;
}
