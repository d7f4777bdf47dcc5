/**
 * The tables' rows as both stores read them (same columns in SQLite and PostgreSQL, the
 * bodies as JSON text), and the records made from them.
 */
import type {
  AccountRecord,
  CredentialRecord,
  EventRecord,
  PairingClaimOutcome,
  PairingRecord,
  ReleaseRecord,
  TerminalRecord,
  TransactionRecord,
} from './records.js';

/** A row of `releases`, in either store. */
export interface ReleaseRow {
  account_id: string;
  version: string;
  arch: string;
  manifest: string;
  signature: string;
  archive_sha256: string;
  archive_size: number | string;
  file: string;
  published_at: string;
}

export function toRelease(row: ReleaseRow): ReleaseRecord {
  return {
    accountId: row.account_id,
    version: row.version,
    arch: row.arch,
    manifest: row.manifest,
    signature: row.signature,
    archiveSha256: row.archive_sha256,
    archiveSize: Number(row.archive_size),
    file: row.file,
    publishedAt: row.published_at,
  };
}

export function releaseValues(r: ReleaseRecord) {
  return [
    r.accountId,
    r.version,
    r.arch,
    r.manifest,
    r.signature,
    r.archiveSha256,
    r.archiveSize,
    r.file,
    r.publishedAt,
  ] as const;
}

export const RELEASE_COLUMNS =
  'account_id, version, arch, manifest, signature, archive_sha256, archive_size, file, published_at';

export const UNCONFIRMED_STATES = `('PROCESSING','AWAITING_CONTINUE','AWAITING_CONFIRM')`;
export const ACTIVE_STATES = `('PROCESSING','AWAITING_CONTINUE')`;
/**
 * The SQLite index of a terminal's transactions by state holds unconfirmed ones only: a
 * query uses it when it repeats the index's condition word for word, as this does.
 */
export const IN_UNCONFIRMED_INDEX = `state IN ${UNCONFIRMED_STATES}`;
/** Settings key of the position through which retention has deleted events. */
export const TRIMMED_SETTING = 'events_trimmed_through';

export interface TransactionRow {
  id: string;
  account_id: string;
  original_id: string | null;
  due_at: string | null;
  version: number;
  body: string;
}

export interface TerminalRow {
  id: string;
  account_id: string;
  kind: TerminalRecord['kind'];
  capabilities: string;
  status: string;
  created_at: string;
  name: string | null;
  cohort: string | null;
}

export interface EventRow {
  position: number;
  id: string;
  account_id: string;
  subject: string;
  kind: EventRecord['kind'];
  time: string;
  data: string;
}

export interface AccountRow {
  id: string;
  kind: string;
  name: string | null;
  created_at: string;
  disabled_at: string | null;
}

export const toAccount = (row: AccountRow): AccountRecord => ({
  id: row.id,
  kind: row.kind === 'operator' ? 'operator' : 'merchant',
  ...(row.name !== null ? { name: row.name } : {}),
  createdAt: row.created_at,
  ...(row.disabled_at !== null ? { disabledAt: row.disabled_at } : {}),
});

/** The columns both stores select for an account. */
export const ACCOUNT_COLUMNS = 'id, kind, name, created_at, disabled_at';

export interface CredentialRow {
  username: string;
  secret_hash: string;
  account_id: string;
  terminal_id: string | null;
  created_at: string;
}

export const toCredential = (row: CredentialRow): CredentialRecord => ({
  username: row.username,
  secretHash: row.secret_hash,
  accountId: row.account_id,
  ...(row.terminal_id ? { terminalId: row.terminal_id } : {}),
  createdAt: row.created_at,
});

export const toTransaction = (row: TransactionRow): TransactionRecord => ({
  txn: JSON.parse(row.body),
  accountId: row.account_id,
  ...(row.original_id ? { originalId: row.original_id } : {}),
  ...(row.due_at ? { dueAt: row.due_at } : {}),
  version: row.version,
});

/** A new terminal's column values, in the order of the INSERT both stores use. */
export const terminalValues = (t: TerminalRecord) => [
  t.id,
  t.accountId,
  t.kind,
  JSON.stringify(t.capabilities),
  JSON.stringify(t.status),
  t.createdAt,
  t.name ?? null,
  t.cohort ?? null,
];

/** The INSERT of a new terminal, with placeholders `?` (SQLite) or `$n` (PostgreSQL). */
export const insertTerminalSql = (placeholder: (n: number) => string) =>
  `INSERT INTO terminals (id, account_id, kind, capabilities, status, created_at, name, cohort) VALUES (${[1, 2, 3, 4, 5, 6, 7, 8].map(placeholder).join(', ')})`;

export const toTerminal = (row: TerminalRow): TerminalRecord => ({
  id: row.id,
  accountId: row.account_id,
  kind: row.kind,
  capabilities: JSON.parse(row.capabilities),
  status: JSON.parse(row.status),
  createdAt: row.created_at,
  ...(row.name ? { name: row.name } : {}),
  ...(row.cohort ? { cohort: row.cohort } : {}),
});

export const toEvent = (row: EventRow): EventRecord => ({
  position: row.position,
  id: row.id,
  accountId: row.account_id,
  subject: row.subject,
  kind: row.kind,
  time: row.time,
  data: JSON.parse(row.data),
});

export interface PairingRow {
  secret_hash: string;
  code: string;
  created_at: string;
  expires_at: string;
  claim: string | null;
}

export const toPairing = (row: PairingRow): PairingRecord => ({
  secretHash: row.secret_hash,
  code: row.code,
  createdAt: row.created_at,
  expiresAt: row.expires_at,
  ...(row.claim ? { claim: JSON.parse(row.claim) } : {}),
});

/** Pairings kept this long after they expire, so a late claim hears `expired`, not `unknown`. */
export const PAIRING_KEPT_MS = 86_400_000;

/** What a claim of a code decides on the pairing's row as it stands. */
export function pairingClaimOutcome(
  row: Pick<PairingRow, 'expires_at' | 'claim'> | undefined,
  at: string,
): PairingClaimOutcome {
  if (!row) return 'unknown';
  if (row.claim) return 'used';
  return row.expires_at <= at ? 'expired' : 'claimed';
}
