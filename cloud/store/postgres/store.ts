/**
 * The shared store: PostgreSQL, for several relay processes on one database. Behaves as
 * the SQLite store does (../sqlite.ts is the reference); what differs is how it stays
 * right with other processes committing beside it:
 *
 * - A change locks its terminal's row first (`FOR UPDATE`): every change of one terminal,
 *   in whichever process, waits for the one before it, so the checks its decision makes
 *   (one active transaction, the unconfirmed limit, a report's order) hold across
 *   processes. A referenced refund also locks its original purchase, so refunds through
 *   different terminals reserve its amount one after the other.
 * - Event positions come from a one-row counter taken as the last step before COMMIT: its
 *   row lock, held until the commit, hands out positions in commit order, so a reader
 *   that has read up to a position never sees a lower one appear later.
 * - A commit that changed something NOTIFYs the other relays in the same transaction
 *   (change-bus.ts), so they hear of it only if it commits.
 *
 * Writes that decide on what they read (changes, status updates, reports,
 * acknowledgements, writes.ts) commit in groups (group-commit.ts). Reads, and the writes
 * that decide nothing, go to the pool directly, outside the batches.
 */
import type pg from 'pg';
import type {
  ReaderCapabilities,
  TerminalCommand,
  TerminalReadings,
} from '../../../protocol/index.js';
import type { Decide } from '../../transactions/change.js';
import type {
  ConfigLayerRecord,
  CredentialRecord,
  TerminalCredentialSet,
  FleetReportRecord,
  EventQuery,
  EventRecord,
  NewEvent,
  PairingClaimOutcome,
  PairingRecord,
  ReleaseRecord,
  RolloutRecord,
  PendingCommand,
  TerminalRecord,
  TransactionQuery,
  TransactionRecord,
  WebhookRecord,
} from '../records.js';
import {
  TRIMMED_SETTING,
  UNCONFIRMED_STATES,
  insertTerminalSql,
  terminalValues,
  toCredential,
  toEvent,
  toTerminal,
  toTransaction,
  type CredentialRow,
  type EventRow,
  type TransactionRow,
} from '../rows.js';
import type { Settlement } from '../../../protocol/settlement.js';
import type { ReportPosition } from '../../delivery/report-order.js';
import type { ChangeKey, Store } from '../store.js';
import { encodeNotice, type Sender } from './change-bus.js';
import { withClient, type Logger } from './connection.js';
import { GroupCommit } from './group-commit.js';
import * as fleet from './fleet.js';
import * as pairings from './pairings.js';
import * as releases from './releases.js';
import * as rollouts from './rollouts.js';
import {
  TERMINAL_COLUMNS,
  TX_COLUMNS,
  eventWhere,
  lastReportOf,
  type TerminalRow,
} from './statements.js';
import { ackWrite, changeWrite, reportWrite, settlementWrite, statusWrite } from './writes.js';

/** A terminal's credential revision grows in the statement that changes one of its credentials. */
const BUMP_CREDENTIAL_REVISION =
  'INSERT INTO terminal_credential_revisions (terminal_id, revision)';
const ON_CREDENTIAL_REVISION =
  'ON CONFLICT (terminal_id) DO UPDATE SET revision = terminal_credential_revisions.revision + 1';

export class PostgresStore implements Store {
  private closed = false;
  private readonly batches: GroupCommit;

  constructor(
    private readonly pool: pg.Pool,
    /** Who this store's commits notify as (see change-bus.ts). */
    private readonly sender: Sender,
    batches: { concurrency: number; size: number },
    private readonly logger: Logger,
  ) {
    this.batches = new GroupCommit(
      pool,
      (change) => encodeNotice(sender, change),
      batches.concurrency,
      batches.size,
      logger,
    );
  }

  /** Runs `work` on a connection of the pool; on failure rolls back what it left open. */
  private withClient<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return withClient(this.pool, this.logger, work);
  }

  /** Resolves once every write queued has been answered. */
  drain(): Promise<void> {
    return this.batches.drain();
  }

  /** Answers the writes queued, then ends the pool. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.batches.drain();
    await this.pool.end();
  }

  async ensureAccount(accountId: string, createdAt: string): Promise<void> {
    await this.pool.query(
      'INSERT INTO accounts (id, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING',
      [accountId, createdAt],
    );
  }

  async putCredential(c: CredentialRecord): Promise<void> {
    await this.pool.query(
      `WITH put AS (INSERT INTO credentials (username, secret_hash, account_id, terminal_id, created_at)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (username) DO UPDATE SET secret_hash = excluded.secret_hash,
           account_id = excluded.account_id, terminal_id = excluded.terminal_id
         RETURNING terminal_id)
       ${BUMP_CREDENTIAL_REVISION} SELECT terminal_id, 1 FROM put
         WHERE terminal_id IS NOT NULL ${ON_CREDENTIAL_REVISION}`,
      [c.username, c.secretHash, c.accountId, c.terminalId ?? null, c.createdAt],
    );
  }

  async findCredential(username: string): Promise<CredentialRecord | undefined> {
    const { rows } = await this.pool.query<CredentialRow>({
      name: 'tps_credential',
      text: 'SELECT username, secret_hash, account_id, terminal_id, created_at FROM credentials WHERE username = $1',
      values: [username],
    });
    return rows[0] ? toCredential(rows[0]) : undefined;
  }

  async listCredentials(accountId: string): Promise<CredentialRecord[]> {
    const { rows } = await this.pool.query<CredentialRow>(
      'SELECT username, secret_hash, account_id, terminal_id, created_at FROM credentials WHERE account_id = $1 ORDER BY username',
      [accountId],
    );
    return rows.map(toCredential);
  }

  async deleteCredential(username: string): Promise<boolean> {
    const { rows } = await this.pool.query<{ deleted: string }>(
      `WITH gone AS (DELETE FROM credentials WHERE username = $1 RETURNING terminal_id),
         bumped AS (${BUMP_CREDENTIAL_REVISION} SELECT terminal_id, 1 FROM gone
           WHERE terminal_id IS NOT NULL ${ON_CREDENTIAL_REVISION})
       SELECT count(*) AS deleted FROM gone`,
      [username],
    );
    return Number(rows[0]?.deleted ?? 0) > 0;
  }

  async terminalCredentials(terminalId: string): Promise<TerminalCredentialSet> {
    // One statement: one snapshot of the set and its revision.
    const { rows } = await this.pool.query<{
      revision: string;
      credentials: TerminalCredentialSet['credentials'];
    }>(
      `SELECT coalesce((SELECT revision FROM terminal_credential_revisions WHERE terminal_id = $1), 0) AS revision,
         coalesce((SELECT json_agg(json_build_object('username', username, 'secretHash', secret_hash) ORDER BY username)
           FROM credentials WHERE terminal_id = $1), '[]'::json) AS credentials`,
      [terminalId],
    );
    return { revision: Number(rows[0]!.revision), credentials: rows[0]!.credentials };
  }

  async deleteAgentCredential(terminalId: string): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      'DELETE FROM agent_credentials WHERE terminal_id = $1',
      [terminalId],
    );
    return (rowCount ?? 0) > 0;
  }

  async createTerminal(t: TerminalRecord): Promise<void> {
    await this.pool.query(
      insertTerminalSql((n) => `$${n}`),
      terminalValues(t),
    );
  }

  async setReaderCapabilities(terminalId: string, reader: ReaderCapabilities | undefined) {
    // jsonb_set / `-` keep the other capabilities as they are.
    await this.pool.query(
      reader
        ? `UPDATE terminals SET capabilities = jsonb_set(capabilities::jsonb, '{reader}', $2::jsonb)::text WHERE id = $1`
        : `UPDATE terminals SET capabilities = (capabilities::jsonb - 'reader')::text WHERE id = $1`,
      reader ? [terminalId, JSON.stringify(reader)] : [terminalId],
    );
  }

  async putAgentCredential(terminalId: string, secretHash: string, createdAt: string) {
    await this.pool.query(
      `INSERT INTO agent_credentials (terminal_id, secret_hash, created_at) VALUES ($1, $2, $3)
       ON CONFLICT (terminal_id) DO UPDATE SET secret_hash = excluded.secret_hash`,
      [terminalId, secretHash, createdAt],
    );
  }

  async findAgentCredential(terminalId: string): Promise<string | undefined> {
    const { rows } = await this.pool.query<{ secret_hash: string }>(
      'SELECT secret_hash FROM agent_credentials WHERE terminal_id = $1',
      [terminalId],
    );
    return rows[0]?.secret_hash;
  }

  async lastReport(terminalId: string): Promise<{ journal: string | undefined; seq: number }> {
    const { rows } = await this.pool.query<TerminalRow>(
      'SELECT last_report_journal, last_report_seq FROM terminals WHERE id = $1',
      [terminalId],
    );
    return lastReportOf(rows[0]);
  }

  async statusAndLastReport(terminalId: string) {
    const { rows } = await this.pool.query<TerminalRow>({
      name: 'tps_status_and_last_report',
      text: 'SELECT status, last_report_journal, last_report_seq FROM terminals WHERE id = $1',
      values: [terminalId],
    });
    const row = rows[0];
    if (!row) return undefined;
    return { status: JSON.parse(row.status) as TerminalReadings, lastReport: lastReportOf(row) };
  }

  recordReport(terminalId: string, position: ReportPosition): Promise<void> {
    return this.batches.write(reportWrite(terminalId, position));
  }

  async getTerminal(terminalId: string): Promise<TerminalRecord | undefined> {
    const { rows } = await this.pool.query<TerminalRow>({
      name: 'tps_terminal',
      text: `SELECT ${TERMINAL_COLUMNS} FROM terminals WHERE id = $1`,
      values: [terminalId],
    });
    return rows[0] ? toTerminal(rows[0]) : undefined;
  }

  async listTerminals(kind?: TerminalRecord['kind']): Promise<TerminalRecord[]> {
    const { rows } = kind
      ? await this.pool.query<TerminalRow>(
          `SELECT ${TERMINAL_COLUMNS} FROM terminals WHERE kind = $1 ORDER BY id`,
          [kind],
        )
      : await this.pool.query<TerminalRow>(`SELECT ${TERMINAL_COLUMNS} FROM terminals ORDER BY id`);
    return rows.map(toTerminal);
  }

  updateTerminalStatus(
    terminalId: string,
    readings: TerminalReadings,
    at: string,
    eventId: string,
    report?: ReportPosition,
  ): Promise<EventRecord | undefined> {
    return this.batches.write(statusWrite(terminalId, readings, at, eventId, report));
  }

  appendSettlement(
    terminalId: string,
    settlement: Settlement,
    eventId: string,
    report?: ReportPosition,
  ): Promise<EventRecord | undefined> {
    return this.batches.write(settlementWrite(terminalId, settlement, eventId, report));
  }

  async getTransaction(
    terminalId: string,
    externalId: string,
  ): Promise<TransactionRecord | undefined> {
    const { rows } = await this.pool.query<TransactionRow>({
      name: 'tps_transaction_by_key',
      text: `SELECT ${TX_COLUMNS} FROM transactions WHERE terminal_id = $1 AND external_id = $2`,
      values: [terminalId, externalId],
    });
    return rows[0] ? toTransaction(rows[0]) : undefined;
  }

  async getTransactionById(id: string): Promise<TransactionRecord | undefined> {
    const { rows } = await this.pool.query<TransactionRow>({
      name: 'tps_transaction_by_id',
      text: `SELECT ${TX_COLUMNS} FROM transactions WHERE id = $1`,
      values: [id],
    });
    return rows[0] ? toTransaction(rows[0]) : undefined;
  }

  async listUnconfirmed(terminalId: string): Promise<TransactionRecord[]> {
    const { rows } = await this.pool.query<TransactionRow>(
      `SELECT ${TX_COLUMNS} FROM transactions WHERE terminal_id = $1 AND state IN ${UNCONFIRMED_STATES} ORDER BY id`,
      [terminalId],
    );
    return rows.map(toTransaction);
  }

  async searchTransactions(query: TransactionQuery): Promise<TransactionRecord[]> {
    // Each filter applies when given (NULL: any); newest first by (created_at, id), after
    // the row $5 in that order.
    const { rows } = await this.pool.query<TransactionRow>({
      name: 'tps_transaction_search',
      text: `SELECT ${TX_COLUMNS} FROM transactions WHERE account_id = $1
               AND ($2::text IS NULL OR terminal_id = $2) AND ($3::text IS NULL OR external_id = $3)
               AND ($4::text IS NULL OR state = $4)
               AND ($5::text IS NULL OR (created_at, id) <
                     ((SELECT created_at FROM transactions WHERE id = $5), $5))
             ORDER BY created_at DESC, id DESC LIMIT $6`,
      values: [
        query.accountId,
        query.terminalId ?? null,
        query.externalId ?? null,
        query.state ?? null,
        query.beforeId ?? null,
        query.limit,
      ],
    });
    return rows.map(toTransaction);
  }

  async listRefunds(originalId: string): Promise<TransactionRecord[]> {
    const { rows } = await this.pool.query<TransactionRow>(
      `SELECT ${TX_COLUMNS} FROM transactions WHERE original_id = $1 ORDER BY id`,
      [originalId],
    );
    return rows.map(toTransaction);
  }

  async listDue(until: string, limit: number): Promise<TransactionRecord[]> {
    const { rows } = await this.pool.query<TransactionRow>(
      `SELECT ${TX_COLUMNS} FROM transactions WHERE due_at IS NOT NULL AND due_at <= $1 ORDER BY due_at LIMIT $2`,
      [until, limit],
    );
    return rows.map(toTransaction);
  }

  async nextDueAt(): Promise<string | undefined> {
    const { rows } = await this.pool.query<{ due_at: string }>(
      'SELECT due_at FROM transactions WHERE due_at IS NOT NULL ORDER BY due_at LIMIT 1',
    );
    return rows[0]?.due_at;
  }

  /** A write of a batch (see writes.ts changeWrite). */
  changeTransaction<R>(key: ChangeKey, decide: Decide<R>): Promise<R> {
    return this.batches.write(changeWrite(key, decide));
  }

  async queueCommand(terminalId: string, command: TerminalCommand): Promise<void> {
    await this.pool.query(
      'INSERT INTO terminal_commands (command_id, terminal_id, body, created_at) VALUES ($1, $2, $3, $4)',
      [command.command_id, terminalId, JSON.stringify(command), new Date().toISOString()],
    );
  }

  async pendingCommands(): Promise<PendingCommand[]> {
    const { rows } = await this.pool.query<{ terminal_id: string; body: string }>(
      'SELECT terminal_id, body FROM terminal_commands WHERE acked_at IS NULL ORDER BY seq',
    );
    return rows.map((row) => ({ terminalId: row.terminal_id, command: JSON.parse(row.body) }));
  }

  ackCommand(terminalId: string, commandId: string, at: string): Promise<void> {
    return this.batches.write(ackWrite(terminalId, commandId, at));
  }

  async readEvents(query: EventQuery): Promise<EventRecord[]> {
    if (query.kind === null) return [];
    const { sql, values } = eventWhere(query);
    const { rows } = await this.pool.query<EventRow>(
      `SELECT position, id, account_id, subject, kind, time, data FROM events
       WHERE ${sql} ORDER BY position LIMIT $${values.length + 1}`,
      [...values, query.limit],
    );
    return rows.map(toEvent);
  }

  async countEvents(query: Omit<EventQuery, 'limit'>): Promise<number> {
    if (query.kind === null) return 0;
    const { sql, values } = eventWhere(query);
    const { rows } = await this.pool.query<{ n: number }>(
      `SELECT count(*) AS n FROM events WHERE ${sql}`,
      values,
    );
    return rows[0]?.n ?? 0;
  }

  async eventBounds(): Promise<{ latest: number; trimmedThrough: number }> {
    // The counter keeps the highest position ever given, even once it is deleted.
    const { rows } = await this.pool.query<{ latest: number; trimmed: string | null }>(
      `SELECT (SELECT last FROM event_positions) AS latest,
              (SELECT value FROM settings WHERE key = $1) AS trimmed`,
      [TRIMMED_SETTING],
    );
    return { latest: rows[0]?.latest ?? 0, trimmedThrough: Number(rows[0]?.trimmed ?? 0) };
  }

  trimEvents(olderThan: string, keepFrom: number): Promise<number> {
    return this.withClient(async (client) => {
      const [, found] = await Promise.all([
        client.query('BEGIN'),
        client.query<{ last: number | null; previous: string | null }>(
          `SELECT (SELECT max(position) FROM events WHERE time < $1 AND position < $2) AS last,
                  (SELECT value FROM settings WHERE key = $3) AS previous`,
          [olderThan, keepFrom, TRIMMED_SETTING],
        ),
      ]);
      const last = found.rows[0]?.last ?? null;
      const previous = Number(found.rows[0]?.previous ?? 0);
      if (last === null || last <= previous) {
        await client.query('COMMIT');
        return previous;
      }
      await Promise.all([
        client.query('DELETE FROM events WHERE position <= $1', [last]),
        // Only ever forward, should two processes trim at once.
        client.query(
          `INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE
           SET value = excluded.value WHERE settings.value::bigint < excluded.value::bigint`,
          [TRIMMED_SETTING, String(last)],
        ),
        client.query('COMMIT'),
      ]);
      return last;
    });
  }

  async createWebhook(webhook: WebhookRecord): Promise<void> {
    await this.pool.query('INSERT INTO webhooks (id, account_id, body) VALUES ($1, $2, $3)', [
      webhook.id,
      webhook.accountId,
      JSON.stringify(webhook),
    ]);
  }

  async getWebhook(id: string): Promise<WebhookRecord | undefined> {
    const { rows } = await this.pool.query<{ body: string }>(
      'SELECT body FROM webhooks WHERE id = $1',
      [id],
    );
    return rows[0] ? JSON.parse(rows[0].body) : undefined;
  }

  async listWebhooks(accountId?: string): Promise<WebhookRecord[]> {
    const { rows } = accountId
      ? await this.pool.query<{ body: string }>(
          'SELECT body FROM webhooks WHERE account_id = $1 ORDER BY id',
          [accountId],
        )
      : await this.pool.query<{ body: string }>('SELECT body FROM webhooks ORDER BY id');
    return rows.map((row) => JSON.parse(row.body));
  }

  updateWebhook(
    id: string,
    patch: Partial<Omit<WebhookRecord, 'id' | 'accountId'>>,
  ): Promise<void> {
    return this.withClient(async (client) => {
      const [, found] = await Promise.all([
        client.query('BEGIN'),
        client.query<{ body: string }>('SELECT body FROM webhooks WHERE id = $1 FOR UPDATE', [id]),
      ]);
      const row = found.rows[0];
      if (!row) {
        await client.query('COMMIT');
        return;
      }
      const next: Record<string, unknown> = { ...JSON.parse(row.body), ...patch };
      // An explicit undefined clears a member.
      for (const [key, value] of Object.entries(patch)) if (value === undefined) delete next[key];
      await Promise.all([
        client.query('UPDATE webhooks SET body = $1 WHERE id = $2', [JSON.stringify(next), id]),
        client.query('COMMIT'),
      ]);
    });
  }

  async deleteWebhook(id: string): Promise<void> {
    await this.pool.query('DELETE FROM webhooks WHERE id = $1', [id]);
  }

  createPairing(pairing: PairingRecord): Promise<boolean> {
    return pairings.createPairing(this.pool, pairing);
  }

  findPairing(secretHash: string): Promise<PairingRecord | undefined> {
    return pairings.findPairing(this.pool, secretHash);
  }

  claimPairing(
    code: string,
    claim: NonNullable<PairingRecord['claim']>,
    terminal: TerminalRecord,
    event: NewEvent,
  ): Promise<PairingClaimOutcome> {
    return this.withClient((client) =>
      pairings.claimPairing(client, (change) => encodeNotice(this.sender, change), {
        code,
        claim,
        terminal,
        event,
      }),
    );
  }

  collectPairing(secretHash: string, agentSecretHash: string, at: string): Promise<boolean> {
    return this.withClient((client) =>
      pairings.collectPairing(client, { secretHash, agentSecretHash, at }),
    );
  }

  createRollout(rollout: RolloutRecord): Promise<void> {
    return this.withClient((client) => rollouts.createRollout(client, rollout));
  }

  getRollout(id: string): Promise<RolloutRecord | undefined> {
    return rollouts.getRollout(this.pool, id);
  }

  listRollouts(filter: {
    accountId?: string;
    state?: RolloutRecord['state'];
  }): Promise<RolloutRecord[]> {
    return rollouts.listRollouts(this.pool, filter);
  }

  updateRollout(rollout: RolloutRecord, revision: number): Promise<boolean> {
    return this.withClient((client) => rollouts.updateRollout(client, rollout, revision));
  }

  recordRolloutOutcome(
    rolloutId: string,
    terminalId: string,
    outcome: { result: string; reason?: string; at: string },
  ): Promise<boolean> {
    return rollouts.recordRolloutOutcome(this.pool, rolloutId, terminalId, outcome);
  }

  cohortTerminals(
    accountId: string,
    cohort: string,
  ): Promise<Array<{ id: string; connected: boolean }>> {
    return rollouts.cohortTerminals(this.pool, accountId, cohort);
  }

  addRelease(release: ReleaseRecord): Promise<boolean> {
    return releases.addRelease(this.pool, release);
  }

  findRelease(
    accountId: string,
    version: string,
    arch: string,
  ): Promise<ReleaseRecord | undefined> {
    return releases.findRelease(this.pool, accountId, version, arch);
  }

  listReleases(accountId: string): Promise<ReleaseRecord[]> {
    return releases.listReleases(this.pool, accountId);
  }

  putConfigLayer(layer: ConfigLayerRecord): Promise<void> {
    return fleet.putConfigLayer(this.pool, layer);
  }

  getConfigLayer(
    accountId: string,
    scope: ConfigLayerRecord['scope'],
    scopeId: string,
  ): Promise<ConfigLayerRecord | undefined> {
    return fleet.getConfigLayer(this.pool, accountId, scope, scopeId);
  }

  putFleetReport(report: FleetReportRecord): Promise<void> {
    return fleet.putFleetReport(this.pool, report);
  }

  fleetReports(terminalId: string): Promise<FleetReportRecord[]> {
    return fleet.fleetReports(this.pool, terminalId);
  }

  async getSetting(key: string): Promise<string | undefined> {
    const { rows } = await this.pool.query<{ value: string }>(
      'SELECT value FROM settings WHERE key = $1',
      [key],
    );
    return rows[0]?.value;
  }

  async putSetting(key: string, value: string): Promise<void> {
    await this.pool.query(
      'INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
      [key, value],
    );
  }

  async claimSetting(key: string, value: string): Promise<string> {
    // Two statements, sent together: an insert that met another process's insert still in
    // flight waits for it, and the read after it, with a snapshot of its own, sees it.
    const [, kept] = await this.withClient((client) =>
      Promise.all([
        client.query(
          'INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING',
          [key, value],
        ),
        client.query<{ value: string }>('SELECT value FROM settings WHERE key = $1', [key]),
      ]),
    );
    return kept.rows[0]!.value;
  }
}
