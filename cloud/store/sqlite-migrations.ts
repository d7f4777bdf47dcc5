/** Versioned schema of the SQLite store; each step runs once, in order, in one transaction. */
import DatabaseConstructor from 'better-sqlite3';
import type Database from 'better-sqlite3';
import { refuseNewerSchema } from '../../common/schema-version.js';
import { UNCONFIRMED_STATES } from './rows.js';

export const SQLITE_MIGRATIONS: ReadonlyArray<{ version: number; sql: string }> = [
  {
    version: 1,
    sql: `
      CREATE TABLE accounts (
        id TEXT PRIMARY KEY,
        created_at TEXT NOT NULL
      );
      CREATE TABLE credentials (
        username TEXT PRIMARY KEY,
        secret_hash TEXT NOT NULL,
        account_id TEXT NOT NULL REFERENCES accounts(id),
        terminal_id TEXT,
        created_at TEXT NOT NULL
      );
      CREATE TABLE terminals (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts(id),
        kind TEXT NOT NULL,
        capabilities TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      CREATE TABLE transactions (
        id TEXT PRIMARY KEY,
        terminal_id TEXT NOT NULL REFERENCES terminals(id),
        external_id TEXT NOT NULL,
        account_id TEXT NOT NULL,
        state TEXT NOT NULL,
        original_id TEXT,
        due_at TEXT,
        version INTEGER NOT NULL,
        body TEXT NOT NULL,
        UNIQUE (terminal_id, external_id)
      );
      CREATE INDEX transactions_by_state ON transactions (terminal_id, state);
      CREATE INDEX transactions_by_original ON transactions (original_id) WHERE original_id IS NOT NULL;
      CREATE INDEX transactions_due ON transactions (due_at) WHERE due_at IS NOT NULL;
      CREATE TABLE terminal_commands (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        command_id TEXT NOT NULL UNIQUE,
        terminal_id TEXT NOT NULL,
        body TEXT NOT NULL,
        created_at TEXT NOT NULL,
        acked_at TEXT
      );
      CREATE INDEX terminal_commands_pending ON terminal_commands (seq) WHERE acked_at IS NULL;
      CREATE TABLE settings (
        key TEXT PRIMARY KEY,
        value TEXT NOT NULL
      );
    `,
  },
  {
    version: 2,
    sql: `
      -- AUTOINCREMENT: a position is never reused, even after retention deletes the newest.
      CREATE TABLE events (
        position INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        account_id TEXT NOT NULL,
        subject TEXT NOT NULL,
        kind TEXT NOT NULL,
        time TEXT NOT NULL,
        data TEXT NOT NULL
      );
      CREATE INDEX events_by_account ON events (account_id, position);
      CREATE INDEX events_by_subject ON events (subject, position);
      CREATE TABLE webhooks (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL REFERENCES accounts(id),
        body TEXT NOT NULL
      );
    `,
  },
  {
    version: 3,
    sql: `
      -- An agent's MQTT credential: it reaches only its own terminal's topics.
      CREATE TABLE agent_credentials (
        terminal_id TEXT PRIMARY KEY REFERENCES terminals(id),
        secret_hash TEXT NOT NULL,
        created_at TEXT NOT NULL
      );
      -- The newest report applied from each terminal's agent: a redelivered one applies once.
      ALTER TABLE terminals ADD COLUMN last_report_seq INTEGER NOT NULL DEFAULT 0;
    `,
  },
  {
    version: 4,
    sql: `
      -- Which agent journal last_report_seq counts in: a reinstalled agent starts over.
      ALTER TABLE terminals ADD COLUMN last_report_journal TEXT;
    `,
  },
  {
    version: 5,
    sql: `
      -- A commit writes each page it touched whole. Indexes keyed by terminal first put the
      -- entries of one commit on as many pages as it has terminals (docs/performance.md):
      -- events are listed by subject from the account's index, which carries the subject;
      -- transactions are looked up by state only while unconfirmed, so only those are indexed.
      DROP INDEX IF EXISTS events_by_subject;
      DROP INDEX IF EXISTS events_by_account;
      CREATE INDEX events_by_account ON events (account_id, position, subject);
      DROP INDEX IF EXISTS transactions_by_state;
      CREATE INDEX transactions_unconfirmed ON transactions (terminal_id, state)
        WHERE state IN ${UNCONFIRMED_STATES};
    `,
  },
  {
    version: 6,
    sql: `
      -- Pairings agents asked for: found by the hash of the agent's secret, claimed by code.
      CREATE TABLE pairings (
        secret_hash TEXT PRIMARY KEY,
        code TEXT NOT NULL UNIQUE,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL,
        claim TEXT
      );
      CREATE INDEX pairings_by_expiry ON pairings (expires_at);
    `,
  },
  {
    version: 7,
    sql: `
      -- An account's transactions, newest first (the console's search pages through them).
      CREATE INDEX transactions_by_account ON transactions (account_id, id);
    `,
  },
  {
    version: 8,
    sql: `
      -- Agent releases an account published; the archive itself is a file in the data dir.
      CREATE TABLE releases (
        account_id TEXT NOT NULL,
        version TEXT NOT NULL,
        arch TEXT NOT NULL,
        manifest TEXT NOT NULL,
        signature TEXT NOT NULL,
        archive_sha256 TEXT NOT NULL,
        archive_size INTEGER NOT NULL,
        file TEXT NOT NULL,
        published_at TEXT NOT NULL,
        PRIMARY KEY (account_id, version, arch)
      );
    `,
  },
  {
    version: 9,
    sql: `
      -- A terminal's name and cohort, kept with it: its pairing is deleted a day after it expires.
      ALTER TABLE terminals ADD COLUMN name TEXT;
      ALTER TABLE terminals ADD COLUMN cohort TEXT;
      UPDATE terminals SET
        name = (SELECT json_extract(p.claim, '$.name') FROM pairings p
                WHERE json_extract(p.claim, '$.terminalId') = terminals.id),
        cohort = (SELECT json_extract(p.claim, '$.cohort') FROM pairings p
                  WHERE json_extract(p.claim, '$.terminalId') = terminals.id);
      -- Desired configuration, a layer per account, cohort and terminal (docs/fleet.md).
      CREATE TABLE config_layers (
        account_id TEXT NOT NULL REFERENCES accounts(id),
        scope TEXT NOT NULL,
        scope_id TEXT NOT NULL,
        body TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (account_id, scope, scope_id)
      );
      -- What each terminal's agent last said of its configuration and of itself.
      CREATE TABLE fleet_reports (
        terminal_id TEXT NOT NULL REFERENCES terminals(id),
        kind TEXT NOT NULL,
        body TEXT NOT NULL,
        received_at TEXT NOT NULL,
        PRIMARY KEY (terminal_id, kind)
      );
    `,
  },
  {
    version: 10,
    sql: `
      -- Rollouts of a release to a cohort in waves, and each terminal they ordered.
      CREATE TABLE rollouts (
        id TEXT PRIMARY KEY,
        account_id TEXT NOT NULL,
        cohort TEXT NOT NULL,
        version TEXT NOT NULL,
        arch TEXT NOT NULL,
        share_percent INTEGER NOT NULL,
        max_failure_percent INTEGER NOT NULL,
        deadline_s INTEGER NOT NULL,
        state TEXT NOT NULL,
        wave INTEGER NOT NULL,
        wave_started_at TEXT NOT NULL,
        paused_reason TEXT,
        superseded_by TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        revision INTEGER NOT NULL
      );
      CREATE INDEX rollouts_by_account ON rollouts (account_id, created_at);
      CREATE INDEX rollouts_by_state ON rollouts (state);
      CREATE TABLE rollout_terminals (
        rollout_id TEXT NOT NULL REFERENCES rollouts(id),
        terminal_id TEXT NOT NULL,
        wave INTEGER NOT NULL,
        ordered_at TEXT NOT NULL,
        result TEXT,
        reason TEXT,
        reported_at TEXT,
        PRIMARY KEY (rollout_id, terminal_id)
      );
    `,
  },
  {
    version: 11,
    sql: `
      -- Grows with every change of a terminal's POS credentials (local mode's verifiers).
      CREATE TABLE terminal_credential_revisions (
        terminal_id TEXT PRIMARY KEY,
        revision INTEGER NOT NULL
      );
      CREATE INDEX credentials_by_terminal ON credentials (terminal_id);
    `,
  },
  {
    version: 12,
    sql: `
      -- Search pages newest first by creation, then id: ids named by their pair (local
      -- mode) are not time-ordered.
      ALTER TABLE transactions ADD COLUMN created_at TEXT NOT NULL DEFAULT '';
      UPDATE transactions SET created_at = json_extract(body, '$.created_at');
      DROP INDEX transactions_by_account;
      CREATE INDEX transactions_by_account ON transactions (account_id, created_at, id);
    `,
  },
  {
    version: 13,
    sql: `
      -- Many merchants on one relay (docs/tenants.md): the accounts there were are merchants'.
      ALTER TABLE accounts ADD COLUMN kind TEXT NOT NULL DEFAULT 'merchant';
      ALTER TABLE accounts ADD COLUMN name TEXT;
      ALTER TABLE accounts ADD COLUMN disabled_at TEXT;
    `,
  },
  {
    version: 14,
    sql: `
      -- Which settings of an account's layer the operator gave: they count even while
      -- merchants may not set them (docs/fleet.md). Layers before were the merchant's.
      ALTER TABLE config_layers ADD COLUMN operator_settings TEXT NOT NULL DEFAULT '[]';
      -- The relay-wide layer of configuration and which settings merchants may set: one row.
      CREATE TABLE relay_fleet_config (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        layer TEXT NOT NULL DEFAULT '{}',
        layer_updated_at TEXT,
        merchant_settings TEXT,
        merchant_settings_updated_at TEXT
      );
    `,
  },
];

/** Brings the store's file up to date, refusing one written by a newer release. */
export function migrateSqlite(db: Database.Database): void {
  db.exec(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)',
  );
  const applied = new Set(
    db
      .prepare<[], { version: number }>('SELECT version FROM schema_migrations')
      .all()
      .map((r) => r.version),
  );
  refuseNewerSchema(
    `the relay store ${db.name}`,
    Math.max(0, ...applied),
    Math.max(...SQLITE_MIGRATIONS.map((m) => m.version)),
  );
  for (const migration of SQLITE_MIGRATIONS) {
    if (applied.has(migration.version)) continue;
    db.transaction(() => {
      db.exec(migration.sql);
      db.prepare('INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)').run(
        migration.version,
        new Date().toISOString(),
      );
    })();
  }
}

/**
 * A store file as a release whose schema stopped at `version` left it (for the tests of
 * upgrades): the database, open, for the test to fill with that release's rows.
 */
export function sqliteFileAtVersion(file: string, version: number): Database.Database {
  const db = new DatabaseConstructor(file);
  db.exec('CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)');
  for (const migration of SQLITE_MIGRATIONS.filter((m) => m.version <= version)) {
    db.exec(migration.sql);
    db.prepare('INSERT INTO schema_migrations VALUES (?, ?)').run(migration.version, 'then');
  }
  return db;
}
