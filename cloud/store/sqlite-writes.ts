/**
 * Every write of the SQLite store, as operations on plain data so that they can run on
 * the writer thread (sqlite-writer.ts): each takes one structured-cloneable argument and
 * returns a structured-cloneable value. They run inside the writer's shared commit.
 */
import Database from 'better-sqlite3';
import type {
  ReaderCapabilities,
  TerminalCommand,
  TerminalReadings,
  TerminalStatus,
} from '../../protocol/index.js';
import type {
  CredentialRecord,
  EventRecord,
  NewEvent,
  PairingClaimOutcome,
  PairingRecord,
  ReleaseRecord,
  TerminalRecord,
  TransactionRecord,
  WebhookRecord,
} from './records.js';
import { settlementEvent } from './records.js';
import {
  ACTIVE_STATES,
  IN_UNCONFIRMED_INDEX,
  PAIRING_KEPT_MS,
  TRIMMED_SETTING,
  pairingClaimOutcome,
  insertTerminalSql,
  terminalValues,
  type PairingRow,
  RELEASE_COLUMNS,
  releaseValues,
} from './rows.js';
import { rolloutWrites } from './sqlite-rollouts.js';
import type { Settlement } from '../../protocol/settlement.js';
import { ReportOutOfOrder, checkReport, type ReportPosition } from '../delivery/report-order.js';
import type { ChangeKey } from './store.js';
import { fleetWrites } from './sqlite-fleet.js';

/** The page size of a new store file (see openSqliteFile). */
export const PAGE_SIZE = 16_384;
const WAL_CHECKPOINT_BYTES = 16 * 1024 * 1024;

/** Opens a connection with the settings every connection to the store's file uses. */
export function openSqliteFile(file: string): Database.Database {
  const db = new Database(file);
  // A new file gets 16 KB pages (an existing one keeps its own). A commit writes each page
  // it touched whole, two system calls a page; with the relay's scattered writes (one row
  // of each terminal's transaction, status and index entries) larger pages mean far fewer
  // calls for a little more data: 4 KB pages held the purchase flows bench near 2,000
  // flows/s, 16 KB pages carry it past 2,300 (docs/performance.md).
  db.pragma(`page_size = ${PAGE_SIZE}`);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  // Checkpoint the WAL into the database every ~16 MB rather than every 4 MB: fewer,
  // larger copies under a steady stream of commits. The setting counts pages.
  const pageSize = db.pragma('page_size', { simple: true }) as number;
  db.pragma(`wal_autocheckpoint = ${Math.round(WAL_CHECKPOINT_BYTES / pageSize)}`);
  db.pragma('foreign_keys = ON');
  db.pragma('busy_timeout = 5000');
  return db;
}

/**
 * What a change's decision saw, in the terms the writer can check again inside its
 * commit: when any of it moved since, the decision is stale (WriteConflict).
 */
export interface DecidedOn {
  currentVersion: number | null;
  /** forCreate: the id of the terminal's active transaction, and its unconfirmed count. */
  activeId?: string | null;
  unconfirmedCount?: number;
  /** A referenced refund: the original's version and its refunds' `id:version` list. */
  originalVersion?: number | null;
  refunds?: string;
}

/** A transaction row as written, its body already JSON (made on the relay thread). */
export interface TransactionWrite {
  id: string;
  terminal_id: string;
  external_id: string;
  account_id: string;
  state: string;
  original_id: string | null;
  due_at: string | null;
  version: number;
  created_at: string;
  body: string;
}

/** An event or command with its JSON already made: strings cross threads cheaply. */
export type EventWrite = Omit<NewEvent, 'data'> & { data: string };
export interface CommandWrite {
  commandId: string;
  body: string;
}

/** A decided change, ready to write (see SqliteStore.changeTransaction). */
export interface DecidedChange {
  key: ChangeKey;
  decidedOn: DecidedOn;
  write?: TransactionWrite;
  commands: CommandWrite[];
  events: EventWrite[];
}

export function toTransactionWrite(record: TransactionRecord): TransactionWrite {
  const { txn } = record;
  return {
    id: txn.id,
    terminal_id: txn.terminal_id,
    external_id: txn.external_id,
    account_id: record.accountId,
    state: txn.state,
    original_id: record.originalId ?? null,
    due_at: record.dueAt ?? null,
    version: record.version,
    created_at: txn.created_at,
    body: JSON.stringify(txn),
  };
}

export const toEventWrite = (event: NewEvent): EventWrite => ({
  ...event,
  data: JSON.stringify(event.data),
});

export const toCommandWrite = (command: TerminalCommand): CommandWrite => ({
  commandId: command.command_id,
  body: JSON.stringify(command),
});

/** Statements that the relay thread's reads and the writes both run. */
export const SHARED_SQL = {
  lastReport:
    'SELECT last_report_journal AS journal, last_report_seq AS seq FROM terminals WHERE id = ?',
  unconfirmedCount: `SELECT count(*) AS n FROM transactions WHERE terminal_id = ? AND ${IN_UNCONFIRMED_INDEX}`,
};
export type LastReportRow = { journal: string | null; seq: number };
export const toLastReport = (row: LastReportRow | undefined) => ({
  journal: row?.journal ?? undefined,
  seq: row?.seq ?? 0,
});

/** The refunds of a purchase as a decision saw them, in a form compared in the commit. */
export const refundsSeen = (refunds: Array<{ id: string; version: number }>) =>
  refunds.map((r) => `${r.id}:${r.version}`).join(',');

/** The decision of a change was taken on a state that has moved since: decide again. */
export class WriteConflict extends Error {
  constructor() {
    super('the transaction changed while its change was decided');
  }
}

export function sqliteWrites(db: Database.Database) {
  const s = {
    versionByKey: db.prepare<[string, string], { id: string; version: number }>(
      'SELECT id, version FROM transactions WHERE terminal_id = ? AND external_id = ?',
    ),
    activeId: db.prepare<[string, string], { id: string }>(
      `SELECT id FROM transactions WHERE terminal_id = ? AND ${IN_UNCONFIRMED_INDEX} AND state IN ${ACTIVE_STATES} AND external_id <> ? LIMIT 1`,
    ),
    unconfirmedCount: db.prepare<[string], { n: number }>(SHARED_SQL.unconfirmedCount),
    refundVersions: db.prepare<[string], { id: string; version: number }>(
      'SELECT id, version FROM transactions WHERE original_id = ? ORDER BY id',
    ),
    upsertTransaction: db.prepare(
      `INSERT INTO transactions (id, terminal_id, external_id, account_id, state, original_id, due_at, version, created_at, body)
       VALUES (@id, @terminal_id, @external_id, @account_id, @state, @original_id, @due_at, @version, @created_at, @body)
       ON CONFLICT (id) DO UPDATE SET state = excluded.state, due_at = excluded.due_at,
         version = excluded.version, created_at = excluded.created_at, body = excluded.body`,
    ),
    insertCommand: db.prepare<[string, string, string, string]>(
      'INSERT INTO terminal_commands (command_id, terminal_id, body, created_at) VALUES (?, ?, ?, ?)',
    ),
    ackCommand: db.prepare<[string, string, string]>(
      'UPDATE terminal_commands SET acked_at = ? WHERE command_id = ? AND terminal_id = ? AND acked_at IS NULL',
    ),
    insertEvent: db.prepare<[string, string, string, string, string, string]>(
      'INSERT INTO events (id, account_id, subject, kind, time, data) VALUES (?, ?, ?, ?, ?, ?)',
    ),
    terminalStatus: db.prepare<[string], { account_id: string; status: string }>(
      'SELECT account_id, status FROM terminals WHERE id = ?',
    ),
    updateTerminalStatus: db.prepare<[string, string]>(
      'UPDATE terminals SET status = ? WHERE id = ?',
    ),
    lastReport: db.prepare<[string], LastReportRow>(SHARED_SQL.lastReport),
    setLastReport: db.prepare<[string, number, string]>(
      'UPDATE terminals SET last_report_journal = ?, last_report_seq = ? WHERE id = ?',
    ),
    setting: db.prepare<[string], { value: string }>('SELECT value FROM settings WHERE key = ?'),
    putSetting: db.prepare<[string, string]>(
      'INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
    ),
    webhookBody: db.prepare<[string], { body: string }>('SELECT body FROM webhooks WHERE id = ?'),
  };

  /**
   * Records the report as applied, or throws ReportOutOfOrder. Like every refusal of a
   * write here, it is thrown before the write has changed anything (see the writer).
   */
  function takeReport(terminalId: string, position: ReportPosition, before?: () => void): void {
    const verdict = checkReport(toLastReport(s.lastReport.get(terminalId)), position);
    if (verdict !== 'apply') throw new ReportOutOfOrder(verdict);
    before?.();
    s.setLastReport.run(position.journal, position.seq, terminalId);
  }

  /** Appends the event and answers its position. */
  function appendEvent(event: EventWrite): number {
    const { lastInsertRowid } = s.insertEvent.run(
      event.id,
      event.accountId,
      event.subject,
      event.kind,
      event.time,
      event.data,
    );
    return Number(lastInsertRowid);
  }

  function insertCommand(terminalId: string, command: CommandWrite, at: string): void {
    s.insertCommand.run(command.commandId, terminalId, command.body, at);
  }

  /** Throws WriteConflict when what the decision saw is no longer what the store holds. */
  function checkDecidedOn(key: ChangeKey, seen: DecidedOn): void {
    const moved =
      (s.versionByKey.get(key.terminalId, key.externalId)?.version ?? null) !==
        seen.currentVersion ||
      (key.forCreate &&
        ((s.activeId.get(key.terminalId, key.externalId)?.id ?? null) !== seen.activeId ||
          (s.unconfirmedCount.get(key.terminalId)?.n ?? 0) !== seen.unconfirmedCount)) ||
      (key.original && !sameOriginal(key.original, seen));
    if (moved) throw new WriteConflict();
  }

  function sameOriginal(original: NonNullable<ChangeKey['original']>, seen: DecidedOn): boolean {
    const row = s.versionByKey.get(original.terminalId, original.externalId);
    if ((row?.version ?? null) !== seen.originalVersion) return false;
    return refundsSeen(row ? s.refundVersions.all(row.id) : []) === seen.refunds;
  }

  /** In the commit of the credential's change (local mode's verifiers, store.ts). */
  function bumpCredentialRevision(terminalId: string): void {
    db.prepare(
      `INSERT INTO terminal_credential_revisions (terminal_id, revision) VALUES (?, 1)
       ON CONFLICT (terminal_id) DO UPDATE SET revision = revision + 1`,
    ).run(terminalId);
  }

  return {
    ...fleetWrites(db),
    ...rolloutWrites(db),
    applyChange(change: DecidedChange): void {
      const { key } = change;
      const check = () => checkDecidedOn(key, change.decidedOn);
      if (key.report) takeReport(key.terminalId, key.report, check);
      else check();
      const now = new Date().toISOString();
      if (change.write) s.upsertTransaction.run(change.write);
      for (const command of change.commands) insertCommand(key.terminalId, command, now);
      for (const event of change.events) appendEvent(event);
    },

    updateTerminalStatus(a: {
      terminalId: string;
      readings: TerminalReadings;
      at: string;
      eventId: string;
      report?: ReportPosition;
    }): EventRecord | undefined {
      if (a.report) takeReport(a.terminalId, a.report);
      const row = s.terminalStatus.get(a.terminalId);
      if (!row) return undefined;
      const current: TerminalStatus = JSON.parse(row.status);
      const changed = Object.entries(a.readings).some(
        ([key, value]) => current[key as keyof TerminalStatus] !== value,
      );
      if (!changed) return undefined;
      const status: TerminalStatus = { ...current, ...a.readings, updated_at: a.at };
      s.updateTerminalStatus.run(JSON.stringify(status), a.terminalId);
      const event: NewEvent = {
        id: a.eventId,
        accountId: row.account_id,
        subject: a.terminalId,
        kind: 'TerminalStatus',
        time: a.at,
        data: status,
      };
      return { ...event, position: appendEvent(toEventWrite(event)) };
    },

    appendSettlement(a: {
      terminalId: string;
      settlement: Settlement;
      eventId: string;
      report?: ReportPosition;
    }): EventRecord | undefined {
      if (a.report) takeReport(a.terminalId, a.report);
      const row = s.terminalStatus.get(a.terminalId);
      if (!row) return undefined;
      const event = settlementEvent(a.terminalId, row.account_id, a.settlement, a.eventId);
      return { ...event, position: appendEvent(toEventWrite(event)) };
    },

    setReaderCapabilities(a: { terminalId: string; reader?: ReaderCapabilities }): void {
      // json_set/json_remove keep the other capabilities as they are.
      if (a.reader) {
        db.prepare(
          "UPDATE terminals SET capabilities = json_set(capabilities, '$.reader', json(?)) WHERE id = ?",
        ).run(JSON.stringify(a.reader), a.terminalId);
      } else {
        db.prepare(
          "UPDATE terminals SET capabilities = json_remove(capabilities, '$.reader') WHERE id = ?",
        ).run(a.terminalId);
      }
    },

    recordReport(a: { terminalId: string; position: ReportPosition }): void {
      takeReport(a.terminalId, a.position);
    },

    queueCommand(a: { terminalId: string; command: TerminalCommand }): void {
      insertCommand(a.terminalId, toCommandWrite(a.command), new Date().toISOString());
    },

    ackCommand(a: { terminalId: string; commandId: string; at: string }): void {
      s.ackCommand.run(a.at, a.commandId, a.terminalId);
    },

    ensureAccount(a: { accountId: string; createdAt: string }): void {
      db.prepare('INSERT INTO accounts (id, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING').run(
        a.accountId,
        a.createdAt,
      );
    },

    putCredential(c: CredentialRecord): void {
      db.prepare(
        `INSERT INTO credentials (username, secret_hash, account_id, terminal_id, created_at)
         VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (username) DO UPDATE SET secret_hash = excluded.secret_hash,
           account_id = excluded.account_id, terminal_id = excluded.terminal_id`,
      ).run(c.username, c.secretHash, c.accountId, c.terminalId ?? null, c.createdAt);
      if (c.terminalId) bumpCredentialRevision(c.terminalId);
    },

    deleteCredential(username: string): boolean {
      const gone = db
        .prepare<[string], { terminal_id: string | null }>(
          'DELETE FROM credentials WHERE username = ? RETURNING terminal_id',
        )
        .get(username);
      if (gone?.terminal_id) bumpCredentialRevision(gone.terminal_id);
      return gone !== undefined;
    },

    deleteAgentCredential(terminalId: string): boolean {
      return (
        db.prepare('DELETE FROM agent_credentials WHERE terminal_id = ?').run(terminalId).changes >
        0
      );
    },

    createTerminal(t: TerminalRecord): void {
      db.prepare(insertTerminalSql(() => '?')).run(terminalValues(t));
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

    putAgentCredential(a: { terminalId: string; secretHash: string; createdAt: string }): void {
      db.prepare(
        `INSERT INTO agent_credentials (terminal_id, secret_hash, created_at) VALUES (?, ?, ?)
         ON CONFLICT (terminal_id) DO UPDATE SET secret_hash = excluded.secret_hash`,
      ).run(a.terminalId, a.secretHash, a.createdAt);
    },

    trimEvents(a: { olderThan: string; keepFrom: number }): number {
      const last = db
        .prepare<[string, number], { position: number | null }>(
          'SELECT max(position) AS position FROM events WHERE time < ? AND position < ?',
        )
        .get(a.olderThan, a.keepFrom)?.position;
      const previous = Number(s.setting.get(TRIMMED_SETTING)?.value ?? 0);
      if (last === null || last === undefined || last <= previous) return previous;
      db.prepare('DELETE FROM events WHERE position <= ?').run(last);
      s.putSetting.run(TRIMMED_SETTING, String(last));
      return last;
    },

    createWebhook(webhook: WebhookRecord): void {
      db.prepare('INSERT INTO webhooks (id, account_id, body) VALUES (?, ?, ?)').run(
        webhook.id,
        webhook.accountId,
        JSON.stringify(webhook),
      );
    },

    updateWebhook(a: {
      id: string;
      patch: Partial<Omit<WebhookRecord, 'id' | 'accountId'>>;
    }): void {
      const row = s.webhookBody.get(a.id);
      if (!row) return;
      const next: Record<string, unknown> = { ...JSON.parse(row.body), ...a.patch };
      // An explicit undefined clears a member.
      for (const [key, value] of Object.entries(a.patch)) if (value === undefined) delete next[key];
      db.prepare('UPDATE webhooks SET body = ? WHERE id = ?').run(JSON.stringify(next), a.id);
    },

    deleteWebhook(a: { id: string }): void {
      db.prepare('DELETE FROM webhooks WHERE id = ?').run(a.id);
    },

    putSetting(a: { key: string; value: string }): void {
      s.putSetting.run(a.key, a.value);
    },

    createPairing(p: PairingRecord): boolean {
      const keptFrom = new Date(Date.parse(p.createdAt) - PAIRING_KEPT_MS).toISOString();
      db.prepare('DELETE FROM pairings WHERE expires_at < ?').run(keptFrom);
      const { changes } = db
        .prepare(
          `INSERT INTO pairings (secret_hash, code, created_at, expires_at) VALUES (?, ?, ?, ?)
           ON CONFLICT (code) DO NOTHING`,
        )
        .run(p.secretHash, p.code, p.createdAt, p.expiresAt);
      return changes === 1;
    },

    claimPairing(a: {
      code: string;
      claim: NonNullable<PairingRecord['claim']>;
      terminal: TerminalRecord;
      event: NewEvent;
    }): PairingClaimOutcome {
      const row = db
        .prepare<[string], PairingRow>('SELECT * FROM pairings WHERE code = ?')
        .get(a.code);
      const outcome = pairingClaimOutcome(row, a.claim.claimedAt);
      if (outcome !== 'claimed') return outcome;
      db.prepare('UPDATE pairings SET claim = ? WHERE code = ?').run(
        JSON.stringify(a.claim),
        a.code,
      );
      db.prepare(insertTerminalSql(() => '?')).run(terminalValues(a.terminal));
      appendEvent(toEventWrite(a.event));
      return outcome;
    },

    collectPairing(a: { secretHash: string; agentSecretHash: string; at: string }): boolean {
      const row = db
        .prepare<[string, string], { terminal_id: string }>(
          `UPDATE pairings SET claim = json_set(claim, '$.collectedAt', ?)
           WHERE secret_hash = ? AND claim IS NOT NULL
             AND json_extract(claim, '$.collectedAt') IS NULL
           RETURNING json_extract(claim, '$.terminalId') AS terminal_id`,
        )
        .get(a.at, a.secretHash);
      if (!row) return false;
      db.prepare(
        `INSERT INTO agent_credentials (terminal_id, secret_hash, created_at) VALUES (?, ?, ?)
         ON CONFLICT (terminal_id) DO UPDATE SET secret_hash = excluded.secret_hash`,
      ).run(row.terminal_id, a.agentSecretHash, a.at);
      return true;
    },

    claimSetting(a: { key: string; value: string }): string {
      db.prepare(
        'INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING',
      ).run(a.key, a.value);
      return s.setting.get(a.key)!.value;
    },
  };
}

export type SqliteWrites = ReturnType<typeof sqliteWrites>;

/** One write as data: the operation's name and its argument. */
export type WriteOp = {
  [K in keyof SqliteWrites]: { op: K; arg: Parameters<SqliteWrites[K]>[0] };
}[keyof SqliteWrites];
export type WriteResult<K extends WriteOp['op']> = ReturnType<SqliteWrites[K]>;

/** One queued write: its id (to answer it) and the operation. */
export interface QueuedWrite {
  id: number;
  op: WriteOp;
}

export type BatchOutcome =
  { id: number; ok: true; value: unknown } | { id: number; ok: false; error: unknown };

/**
 * Each connection's transaction wrapper, made once (making one is not free): its
 * `immediate` form opens a batch's transaction, and called inside it, it is a savepoint.
 */
const wrappers = new WeakMap<
  Database.Database,
  Database.Transaction<(run: () => unknown) => unknown>
>();
function transactionOf(db: Database.Database) {
  let wrapper = wrappers.get(db);
  if (!wrapper) {
    wrapper = db.transaction((run: () => unknown) => run());
    wrappers.set(db, wrapper);
  }
  return wrapper;
}

/** A write failed after it had begun to change the database: its neighbours must be kept apart. */
class NeedsSavepoints extends Error {}

/**
 * Commits a batch of writes as one transaction (group commit), so that they share one
 * flush, and answers each. Without savepoints, a write may fail only with a refusal thrown
 * before it changed anything (a report out of order, a stale decision); any other failure
 * undoes the whole batch, which is then run again with each write in its own savepoint
 * (they are not free, so only then). One refused write never undoes its neighbours.
 */
export function commitBatch(
  db: Database.Database,
  writes: SqliteWrites,
  batch: QueuedWrite[],
): BatchOutcome[] {
  const transaction = transactionOf(db);
  const attempt = (savepoints: boolean): BatchOutcome[] => {
    const outcomes: BatchOutcome[] = [];
    transaction.immediate(() => {
      for (const { id, op } of batch) {
        const run = writes[op.op] as (arg: unknown) => unknown;
        try {
          const value = savepoints ? transaction(() => run(op.arg)) : run(op.arg);
          outcomes.push({ id, ok: true, value });
        } catch (error) {
          const refusal = error instanceof ReportOutOfOrder || error instanceof WriteConflict;
          if (!savepoints && !refusal) throw new NeedsSavepoints();
          outcomes.push({ id, ok: false, error });
        }
      }
    });
    return outcomes;
  };
  try {
    try {
      return attempt(false);
    } catch (error) {
      if (!(error instanceof NeedsSavepoints)) throw error;
      return attempt(true);
    }
  } catch (error) {
    return batch.map(({ id }) => ({ id, ok: false, error }));
  }
}
