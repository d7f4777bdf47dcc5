/** What the relay keeps, beside the API shapes it renders from them. */
import type {
  EventFilter,
  EventKind,
  FleetConfig,
  FleetSettingName,
  ReaderCapabilities,
  TerminalCommand,
  TerminalPaired,
  TerminalSettlement,
  TerminalReadings,
  TerminalStatus,
  Transaction,
} from '../../protocol/index.js';
import type { Settlement } from '../../protocol/settlement.js';

/** An account: a merchant's, or the operator's (docs/tenants.md). */
export interface AccountRecord {
  id: string;
  kind: 'merchant' | 'operator';
  /** What people call it (the merchant's name); absent for accounts made before names. */
  name?: string;
  createdAt: string;
  /** When it was disabled: its credentials are refused until it is enabled again. */
  disabledAt?: string;
}

export interface CredentialRecord {
  username: string;
  /** scrypt hash of the secret, never the secret itself. */
  secretHash: string;
  accountId: string;
  /** A terminal credential reaches only this terminal; an account credential all of its own. */
  terminalId?: string;
  createdAt: string;
}

/** A terminal's POS credentials as one versioned set. */
export interface TerminalCredentialSet {
  revision: number;
  credentials: Array<Pick<CredentialRecord, 'username' | 'secretHash'>>;
}

export interface TerminalCapabilities {
  printer: boolean;
  battery: boolean;
  /** What its card reader can do, as its agent last said (absent: never said, native). */
  reader?: ReaderCapabilities;
}

export interface TerminalRecord {
  id: string;
  accountId: string;
  kind: 'SIMULATOR' | 'AGENT';
  capabilities: TerminalCapabilities;
  status: TerminalStatus;
  createdAt: string;
  /** A person's name for it, and the group it belongs to, as its pairing's claim chose. */
  name?: string;
  cohort?: string;
}

/** One layer of desired configuration (protocol/fleet-config.ts). */
export interface ConfigLayerRecord {
  accountId: string;
  scope: 'account' | 'cohort' | 'terminal';
  /** The cohort id or terminal id; '' for the account's own layer. */
  scopeId: string;
  config: FleetConfig;
  updatedAt: string;
  /**
   * The layer's top-level settings whose value the operator gave (acting for the account):
   * they count even while merchants may not set them; the others count only while they may.
   */
  operatorSettings: FleetSettingName[];
}

/** What the operator decides for every account's fleet (protocol/fleet-config.ts). */
export interface RelayFleetConfigRecord {
  /** The relay-wide layer, under every account's ({} when never set). */
  layer: FleetConfig;
  /** When the layer was last set; null: never. */
  layerUpdatedAt: string | null;
  /** The top-level settings merchants may set in their layers; null: never narrowed, all. */
  merchantSettings: FleetSettingName[] | null;
  /** When the list was last set; null: never. */
  merchantSettingsUpdatedAt: string | null;
}

/** What a terminal's agent last said of itself on a retained fleet topic. */
/** config: its configuration report; facts: what it says of itself; update: its update status. */
export type FleetReportKind = 'config' | 'facts' | 'update';
export interface FleetReportRecord {
  terminalId: string;
  kind: FleetReportKind;
  /** The agent's message, as checked on arrival. */
  body: unknown;
  receivedAt: string;
}

/** The state machine's record of a transaction (protocol/transaction-rules/decision.ts). */
export type { TransactionRecord } from '../../protocol/transaction-rules/decision.js';

export interface PendingCommand {
  terminalId: string;
  command: TerminalCommand;
}

export type { TerminalReadings };

/** One entry of the event log; `position` orders the log and is never reused. */
export interface EventRecord {
  position: number;
  id: string;
  accountId: string;
  /** The terminal the event concerns. */
  subject: string;
  kind: EventKind;
  time: string;
  /** The transaction or terminal status, as the current revision shows it; or a pairing. */
  data: Transaction | TerminalStatus | TerminalPaired | TerminalSettlement;
}
export type NewEvent = Omit<EventRecord, 'position'>;

/**
 * Transactions of an account, newest first by (created_at, id): ids named by their pair
 * (local mode) are not time-ordered. From after the transaction `beforeId` in that order.
 */
export interface TransactionQuery {
  accountId: string;
  terminalId?: string;
  externalId?: string;
  state?: string;
  beforeId?: string;
  limit: number;
}

export interface EventQuery {
  accountId: string;
  /** Events after this position. */
  after: number;
  subject?: string;
  /** `null` matches nothing (a filter on a type the service does not write). */
  kind?: EventKind | null;
  limit: number;
}

export interface WebhookRecord {
  id: string;
  accountId: string;
  /** Set when a terminal credential registered it: it sees only that terminal. */
  terminalId?: string;
  url: string;
  filter: EventFilter;
  mode: 'structured' | 'binary';
  /** HMAC key of the signatures; the service needs it in clear to sign. */
  secret: string;
  enabled: boolean;
  /** Position of the last event the receiver acknowledged. */
  cursor: number;
  createdAt: string;
  disabledReason?: string;
  failingSince?: string;
  lastError?: string;
}

/**
 * A pairing an agent asked for: found by the hash of the agent's secret (never the secret),
 * claimed once by its code before it expires.
 */
/** A published agent release of one account (docs/fleet.md, "Releases"). */
export interface ReleaseRecord {
  accountId: string;
  version: string;
  arch: string;
  /** The manifest's exact bytes, as signed, and the signature (base64). */
  manifest: string;
  signature: string;
  archiveSha256: string;
  archiveSize: number;
  /** The archive's file name in the relay's release folder. */
  file: string;
  publishedAt: string;
}

export interface PairingRecord {
  /** SHA-256 (hex) of the agent's pairing secret. */
  secretHash: string;
  /** The code, normalised (no hyphen); unique among pairings. */
  code: string;
  createdAt: string;
  expiresAt: string;
  /** Set by the claim, together. */
  claim?: {
    accountId: string;
    terminalId: string;
    name: string;
    cohort?: string;
    claimedBy: string;
    claimedAt: string;
    /** Set by the agent's one collection of its broker credential: the pairing is spent. */
    collectedAt?: string;
  };
}

/** What a claim of a code found: only `claimed` changed anything. */
export type PairingClaimOutcome = 'claimed' | 'unknown' | 'expired' | 'used';

/** One terminal a rollout ordered to update, and how it ended once its agent said. */
export interface RolloutTerminalRecord {
  terminalId: string;
  wave: number;
  orderedAt: string;
  result?: string;
  reason?: string;
  reportedAt?: string;
}

/** A release version assigned to a cohort in waves (docs/fleet.md, "Rollouts"). */
export interface RolloutRecord {
  /** Also the `order_id` of its update orders. */
  id: string;
  accountId: string;
  cohort: string;
  version: string;
  arch: string;
  sharePercent: number;
  maxFailurePercent: number;
  deadlineS: number;
  state: 'running' | 'paused' | 'completed' | 'superseded';
  /** 0 before the first wave is ordered; 1 one terminal, 2 the share, 3 the rest. */
  wave: number;
  waveStartedAt: string;
  pausedReason?: string;
  supersededBy?: string;
  createdAt: string;
  updatedAt: string;
  /** Bumped on every update: two relays never both move a rollout from one state. */
  revision: number;
  terminals: RolloutTerminalRecord[];
}

/** The TerminalSettlement event of an end-of-day the terminal ran (Store.appendSettlement). */
export function settlementEvent(
  terminalId: string,
  accountId: string,
  settlement: Settlement,
  eventId: string,
): NewEvent {
  return {
    id: eventId,
    accountId,
    subject: terminalId,
    kind: 'TerminalSettlement',
    time: settlement.finished_at,
    data: { terminal_id: terminalId, ...settlement },
  };
}
