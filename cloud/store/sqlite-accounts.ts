/**
 * The SQLite store's accounts and credentials (ports/accounts.ts) and its settings
 * (ports/settings.ts): the writes run in the writer's shared commit (sqlite-writes.ts),
 * the reads on the relay thread's connection.
 */
import type Database from 'better-sqlite3';
import type { AccountStore } from './ports/accounts.js';
import type { SettingsStore } from './ports/settings.js';
import type { AccountRecord, CredentialRecord, TerminalCredentialSet } from './records.js';
import {
  ACCOUNT_COLUMNS,
  toAccount,
  toCredential,
  type AccountRow,
  type CredentialRow,
} from './rows.js';
import type { QueuesWrites, WriteSteps } from './sqlite-write-steps.js';

/** The writes, as operations the writer thread runs. */
export function accountWrites(db: Database.Database, steps: WriteSteps) {
  /** In the commit of the credential's change (local mode's verifiers, store.ts). */
  function bumpCredentialRevision(terminalId: string): void {
    db.prepare(
      `INSERT INTO terminal_credential_revisions (terminal_id, revision) VALUES (?, 1)
       ON CONFLICT (terminal_id) DO UPDATE SET revision = revision + 1`,
    ).run(terminalId);
  }

  return {
    createAccount(a: AccountRecord): boolean {
      return (
        db
          .prepare(
            `INSERT INTO accounts (id, kind, name, created_at, disabled_at) VALUES (?, ?, ?, ?, ?)
             ON CONFLICT DO NOTHING`,
          )
          .run(a.id, a.kind, a.name ?? null, a.createdAt, a.disabledAt ?? null).changes > 0
      );
    },

    setAccountDisabled(a: { accountId: string; at: string | undefined }): boolean {
      const changed =
        db
          .prepare('UPDATE accounts SET disabled_at = ? WHERE id = ?')
          .run(a.at ?? null, a.accountId).changes > 0;
      // Its terminals' POS credential sets change with it (local mode's verifiers, store.ts).
      db.prepare(
        `INSERT INTO terminal_credential_revisions (terminal_id, revision)
           SELECT id, 1 FROM terminals WHERE account_id = ?
         ON CONFLICT (terminal_id) DO UPDATE SET revision = revision + 1`,
      ).run(a.accountId);
      return changed;
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

    putAgentCredential(a: { terminalId: string; secretHash: string; createdAt: string }): void {
      db.prepare(
        `INSERT INTO agent_credentials (terminal_id, secret_hash, created_at) VALUES (?, ?, ?)
         ON CONFLICT (terminal_id) DO UPDATE SET secret_hash = excluded.secret_hash`,
      ).run(a.terminalId, a.secretHash, a.createdAt);
    },

    putSetting(a: { key: string; value: string }): void {
      steps.putSetting(a.key, a.value);
    },

    claimSetting(a: { key: string; value: string }): string {
      db.prepare(
        'INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING',
      ).run(a.key, a.value);
      return steps.setting(a.key)!;
    },
  };
}

type AccountWrites = ReturnType<typeof accountWrites>;

/** The statements the ports read with (the query plans are tested, sqlite.test.ts). */
export function accountStatements(db: Database.Database) {
  return {
    credential: db.prepare<[string], CredentialRow>('SELECT * FROM credentials WHERE username = ?'),
  };
}

/** The ports, their reads here and their writes queued to the writer. */
export function sqliteAccounts(
  db: Database.Database,
  writer: QueuesWrites<AccountWrites>,
): AccountStore & SettingsStore {
  const { credential } = accountStatements(db);
  return {
    createAccount: (account) => writer.write({ op: 'createAccount', arg: account }),

    async getAccount(accountId) {
      const row = db
        .prepare<[string], AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = ?`)
        .get(accountId);
      return row ? toAccount(row) : undefined;
    },

    async listAccounts() {
      return db
        .prepare<[], AccountRow>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts ORDER BY created_at, id`)
        .all()
        .map(toAccount);
    },

    setAccountDisabled: (accountId, at) =>
      writer.write({ op: 'setAccountDisabled', arg: { accountId, at } }),

    putCredential: (record) => writer.write({ op: 'putCredential', arg: record }),

    async findCredential(username) {
      const row = credential.get(username);
      return row ? toCredential(row) : undefined;
    },

    async listCredentials(accountId) {
      return db
        .prepare<[string], CredentialRow>(
          'SELECT * FROM credentials WHERE account_id = ? ORDER BY username',
        )
        .all(accountId)
        .map(toCredential);
    },

    deleteCredential: (username) => writer.write({ op: 'deleteCredential', arg: username }),

    async terminalCredentials(terminalId) {
      // One statement: one snapshot of the set and its revision.
      const row = db
        .prepare<[string, string], { revision: number; credentials: string }>(
          `SELECT coalesce((SELECT revision FROM terminal_credential_revisions WHERE terminal_id = ?), 0) AS revision,
           (SELECT json_group_array(json_object('username', username, 'secretHash', secret_hash))
              FROM (SELECT username, secret_hash FROM credentials WHERE terminal_id = ? ORDER BY username)) AS credentials`,
        )
        .get(terminalId, terminalId)!;
      return {
        revision: row.revision,
        credentials: JSON.parse(row.credentials) as TerminalCredentialSet['credentials'],
      };
    },

    putAgentCredential: (terminalId, secretHash, createdAt) =>
      writer.write({ op: 'putAgentCredential', arg: { terminalId, secretHash, createdAt } }),

    async findAgentCredential(terminalId) {
      return db
        .prepare<[string], { secret_hash: string }>(
          'SELECT secret_hash FROM agent_credentials WHERE terminal_id = ?',
        )
        .get(terminalId)?.secret_hash;
    },

    deleteAgentCredential: (terminalId) =>
      writer.write({ op: 'deleteAgentCredential', arg: terminalId }),

    async getSetting(key) {
      return db
        .prepare<[string], { value: string }>('SELECT value FROM settings WHERE key = ?')
        .get(key)?.value;
    },

    putSetting: (key, value) => writer.write({ op: 'putSetting', arg: { key, value } }),

    claimSetting: (key, value) => writer.write({ op: 'claimSetting', arg: { key, value } }),
  };
}
