/**
 * The PostgreSQL store's accounts and credentials (ports/accounts.ts) and its settings
 * (ports/settings.ts): statements on the pool, none batched. A terminal's credential
 * revision grows in the statement that changes one of its credentials.
 */
import type pg from 'pg';
import type { AccountStore } from '../ports/accounts.js';
import type { SettingsStore } from '../ports/settings.js';
import type { AccountRecord, CredentialRecord, TerminalCredentialSet } from '../records.js';
import {
  ACCOUNT_COLUMNS,
  toAccount,
  toCredential,
  type AccountRow,
  type CredentialRow,
} from '../rows.js';
import type { WithClient } from './connection.js';

/** A terminal's credential revision grows in the statement that changes one of its credentials. */
const BUMP_CREDENTIAL_REVISION =
  'INSERT INTO terminal_credential_revisions (terminal_id, revision)';
const ON_CREDENTIAL_REVISION =
  'ON CONFLICT (terminal_id) DO UPDATE SET revision = terminal_credential_revisions.revision + 1';

export function postgresAccounts(
  pool: pg.Pool,
  withClient: WithClient,
): AccountStore & SettingsStore {
  return {
    async createAccount(a: AccountRecord): Promise<boolean> {
      const { rowCount } = await pool.query(
        `INSERT INTO accounts (id, kind, name, created_at, disabled_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT DO NOTHING`,
        [a.id, a.kind, a.name ?? null, a.createdAt, a.disabledAt ?? null],
      );
      return (rowCount ?? 0) > 0;
    },

    async getAccount(accountId: string): Promise<AccountRecord | undefined> {
      const { rows } = await pool.query<AccountRow>(
        `SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = $1`,
        [accountId],
      );
      return rows[0] ? toAccount(rows[0]) : undefined;
    },

    async listAccounts(): Promise<AccountRecord[]> {
      const { rows } = await pool.query<AccountRow>(
        `SELECT ${ACCOUNT_COLUMNS} FROM accounts ORDER BY created_at, id`,
      );
      return rows.map(toAccount);
    },

    async setAccountDisabled(accountId: string, at: string | undefined): Promise<boolean> {
      // One statement: the account and its terminals' POS credential revisions (local
      // mode's verifiers, store.ts) change together.
      const { rows } = await pool.query<{ changed: string }>(
        `WITH changed AS (UPDATE accounts SET disabled_at = $1 WHERE id = $2 RETURNING id),
         bumped AS (${BUMP_CREDENTIAL_REVISION}
           SELECT t.id, 1 FROM terminals t JOIN changed ON t.account_id = changed.id
           ${ON_CREDENTIAL_REVISION} RETURNING 1)
         SELECT (SELECT count(*) FROM changed) AS changed, (SELECT count(*) FROM bumped) AS bumped`,
        [at ?? null, accountId],
      );
      return Number(rows[0]?.changed ?? 0) > 0;
    },

    async putCredential(c: CredentialRecord): Promise<void> {
      await pool.query(
        `WITH put AS (INSERT INTO credentials (username, secret_hash, account_id, terminal_id, created_at)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (username) DO UPDATE SET secret_hash = excluded.secret_hash,
           account_id = excluded.account_id, terminal_id = excluded.terminal_id
         RETURNING terminal_id)
       ${BUMP_CREDENTIAL_REVISION} SELECT terminal_id, 1 FROM put
         WHERE terminal_id IS NOT NULL ${ON_CREDENTIAL_REVISION}`,
        [c.username, c.secretHash, c.accountId, c.terminalId ?? null, c.createdAt],
      );
    },

    async findCredential(username: string): Promise<CredentialRecord | undefined> {
      const { rows } = await pool.query<CredentialRow>({
        name: 'tps_credential',
        text: 'SELECT username, secret_hash, account_id, terminal_id, created_at FROM credentials WHERE username = $1',
        values: [username],
      });
      return rows[0] ? toCredential(rows[0]) : undefined;
    },

    async listCredentials(accountId: string): Promise<CredentialRecord[]> {
      const { rows } = await pool.query<CredentialRow>(
        'SELECT username, secret_hash, account_id, terminal_id, created_at FROM credentials WHERE account_id = $1 ORDER BY username',
        [accountId],
      );
      return rows.map(toCredential);
    },

    async deleteCredential(username: string): Promise<boolean> {
      const { rows } = await pool.query<{ deleted: string }>(
        `WITH gone AS (DELETE FROM credentials WHERE username = $1 RETURNING terminal_id),
         bumped AS (${BUMP_CREDENTIAL_REVISION} SELECT terminal_id, 1 FROM gone
           WHERE terminal_id IS NOT NULL ${ON_CREDENTIAL_REVISION})
       SELECT count(*) AS deleted FROM gone`,
        [username],
      );
      return Number(rows[0]?.deleted ?? 0) > 0;
    },

    async terminalCredentials(terminalId: string): Promise<TerminalCredentialSet> {
      // One statement: one snapshot of the set and its revision.
      const { rows } = await pool.query<{
        revision: string;
        credentials: TerminalCredentialSet['credentials'];
      }>(
        `SELECT coalesce((SELECT revision FROM terminal_credential_revisions WHERE terminal_id = $1), 0) AS revision,
         coalesce((SELECT json_agg(json_build_object('username', username, 'secretHash', secret_hash) ORDER BY username)
           FROM credentials WHERE terminal_id = $1), '[]'::json) AS credentials`,
        [terminalId],
      );
      return { revision: Number(rows[0]!.revision), credentials: rows[0]!.credentials };
    },

    async putAgentCredential(terminalId: string, secretHash: string, createdAt: string) {
      await pool.query(
        `INSERT INTO agent_credentials (terminal_id, secret_hash, created_at) VALUES ($1, $2, $3)
       ON CONFLICT (terminal_id) DO UPDATE SET secret_hash = excluded.secret_hash`,
        [terminalId, secretHash, createdAt],
      );
    },

    async findAgentCredential(terminalId: string): Promise<string | undefined> {
      const { rows } = await pool.query<{ secret_hash: string }>(
        'SELECT secret_hash FROM agent_credentials WHERE terminal_id = $1',
        [terminalId],
      );
      return rows[0]?.secret_hash;
    },

    async deleteAgentCredential(terminalId: string): Promise<boolean> {
      const { rowCount } = await pool.query(
        'DELETE FROM agent_credentials WHERE terminal_id = $1',
        [terminalId],
      );
      return (rowCount ?? 0) > 0;
    },

    async getSetting(key: string): Promise<string | undefined> {
      const { rows } = await pool.query<{ value: string }>(
        'SELECT value FROM settings WHERE key = $1',
        [key],
      );
      return rows[0]?.value;
    },

    async putSetting(key: string, value: string): Promise<void> {
      await pool.query(
        'INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
        [key, value],
      );
    },

    async claimSetting(key: string, value: string): Promise<string> {
      // Two statements, sent together: an insert that met another process's insert still in
      // flight waits for it, and the read after it, with a snapshot of its own, sees it.
      const [, kept] = await withClient((client) =>
        Promise.all([
          client.query(
            'INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING',
            [key, value],
          ),
          client.query<{ value: string }>('SELECT value FROM settings WHERE key = $1', [key]),
        ]),
      );
      return kept.rows[0]!.value;
    },
  };
}
