/**
 * Versioned schema of the PostgreSQL store; at open, the steps not yet applied run in
 * order, all in one transaction under an advisory lock, so that relays starting at once
 * apply each step once. The tables are SQLite's (../sqlite-migrations.ts) as they stand after
 * its last step. Times stay ISO 8601 text, as the API renders them, in the "C" collation
 * where they are compared or sorted (so they order as SQLite's do); bodies stay the JSON
 * text the store wrote.
 */
import { refuseNewerSchema } from '../../../common/schema-version.js';
import type pg from 'pg';

/** pg_advisory_xact_lock key under which migrations run (one database-wide key). */
const MIGRATION_LOCK = '7370880201';

export const POSTGRES_MIGRATIONS: ReadonlyArray<{ version: number; sql: string }> = [
  {
    version: 1,
    sql: `
      CREATE TABLE accounts (
        id text PRIMARY KEY,
        created_at text NOT NULL
      );
      CREATE TABLE credentials (
        username text PRIMARY KEY,
        secret_hash text NOT NULL,
        account_id text NOT NULL REFERENCES accounts(id),
        terminal_id text,
        created_at text NOT NULL
      );
      CREATE TABLE terminals (
        id text COLLATE "C" PRIMARY KEY,
        account_id text NOT NULL REFERENCES accounts(id),
        kind text NOT NULL,
        capabilities text NOT NULL,
        status text NOT NULL,
        created_at text NOT NULL,
        -- The newest report applied from the terminal's agent, and the journal it counts in.
        last_report_seq bigint NOT NULL DEFAULT 0,
        last_report_journal text
      );
      CREATE TABLE transactions (
        id text COLLATE "C" PRIMARY KEY,
        terminal_id text COLLATE "C" NOT NULL REFERENCES terminals(id),
        external_id text NOT NULL,
        account_id text NOT NULL,
        state text NOT NULL,
        original_id text COLLATE "C",
        due_at text COLLATE "C",
        version integer NOT NULL,
        body text NOT NULL,
        UNIQUE (terminal_id, external_id)
      );
      CREATE INDEX transactions_by_state ON transactions (terminal_id, state);
      CREATE INDEX transactions_by_original ON transactions (original_id) WHERE original_id IS NOT NULL;
      CREATE INDEX transactions_due ON transactions (due_at) WHERE due_at IS NOT NULL;
      CREATE TABLE terminal_commands (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        command_id text NOT NULL UNIQUE,
        terminal_id text NOT NULL,
        body text NOT NULL,
        created_at text NOT NULL,
        acked_at text
      );
      CREATE INDEX terminal_commands_pending ON terminal_commands (seq) WHERE acked_at IS NULL;
      CREATE TABLE settings (
        key text PRIMARY KEY,
        value text NOT NULL
      );
      -- Positions come from event_positions, not from a sequence: taken as the last step
      -- of a commit, its row lock orders positions as the commits are, so a reader never
      -- sees a position appear below one it has read. Never reused, even after retention
      -- deletes the newest.
      CREATE TABLE events (
        position bigint PRIMARY KEY,
        id text NOT NULL UNIQUE,
        account_id text NOT NULL,
        subject text NOT NULL,
        kind text NOT NULL,
        time text COLLATE "C" NOT NULL,
        data text NOT NULL
      );
      CREATE INDEX events_by_account ON events (account_id, position);
      CREATE INDEX events_by_subject ON events (subject, position);
      CREATE TABLE event_positions (
        one boolean PRIMARY KEY DEFAULT true CHECK (one),
        last bigint NOT NULL
      );
      INSERT INTO event_positions (one, last) VALUES (true, 0);
      CREATE TABLE webhooks (
        id text COLLATE "C" PRIMARY KEY,
        account_id text NOT NULL REFERENCES accounts(id),
        body text NOT NULL
      );
      -- An agent's MQTT credential: it reaches only its own terminal's topics.
      CREATE TABLE agent_credentials (
        terminal_id text COLLATE "C" PRIMARY KEY REFERENCES terminals(id),
        secret_hash text NOT NULL,
        created_at text NOT NULL
      );
    `,
  },
  {
    version: 2,
    sql: `
      -- Pairings agents asked for: found by the hash of the agent's secret, claimed by code.
      CREATE TABLE pairings (
        secret_hash text PRIMARY KEY,
        code text NOT NULL UNIQUE,
        created_at text NOT NULL,
        expires_at text COLLATE "C" NOT NULL,
        claim text
      );
      CREATE INDEX pairings_by_expiry ON pairings (expires_at);
    `,
  },
  {
    version: 3,
    sql: `
      -- An account's transactions, newest first (the console's search pages through them).
      CREATE INDEX transactions_by_account ON transactions (account_id, id);
    `,
  },
  {
    version: 4,
    sql: `
      -- Agent releases an account published; the archive itself is a file in the data dir.
      CREATE TABLE releases (
        account_id text COLLATE "C" NOT NULL,
        version text COLLATE "C" NOT NULL,
        arch text COLLATE "C" NOT NULL,
        manifest text NOT NULL,
        signature text NOT NULL,
        archive_sha256 text NOT NULL,
        archive_size bigint NOT NULL,
        file text NOT NULL,
        published_at text COLLATE "C" NOT NULL,
        PRIMARY KEY (account_id, version, arch)
      );
    `,
  },
  {
    version: 5,
    sql: `
      -- A terminal's name and cohort, kept with it: its pairing is deleted a day after it expires.
      ALTER TABLE terminals ADD COLUMN name text, ADD COLUMN cohort text;
      UPDATE terminals t SET name = p.claim::jsonb->>'name', cohort = p.claim::jsonb->>'cohort'
        FROM pairings p WHERE p.claim IS NOT NULL AND p.claim::jsonb->>'terminalId' = t.id;
      -- Desired configuration, a layer per account, cohort and terminal (docs/fleet.md).
      CREATE TABLE config_layers (
        account_id text NOT NULL REFERENCES accounts(id),
        scope text NOT NULL,
        scope_id text COLLATE "C" NOT NULL,
        body text NOT NULL,
        updated_at text NOT NULL,
        PRIMARY KEY (account_id, scope, scope_id)
      );
      -- What each terminal's agent last said of its configuration and of itself.
      CREATE TABLE fleet_reports (
        terminal_id text COLLATE "C" NOT NULL REFERENCES terminals(id),
        kind text NOT NULL,
        body text NOT NULL,
        received_at text NOT NULL,
        PRIMARY KEY (terminal_id, kind)
      );
    `,
  },
  {
    version: 6,
    sql: `
      -- Rollouts of a release to a cohort in waves, and each terminal they ordered.
      CREATE TABLE rollouts (
        id text COLLATE "C" PRIMARY KEY,
        account_id text NOT NULL,
        cohort text NOT NULL,
        version text NOT NULL,
        arch text NOT NULL,
        share_percent integer NOT NULL,
        max_failure_percent integer NOT NULL,
        deadline_s integer NOT NULL,
        state text NOT NULL,
        wave integer NOT NULL,
        wave_started_at text NOT NULL,
        paused_reason text,
        superseded_by text,
        created_at text NOT NULL,
        updated_at text NOT NULL,
        revision integer NOT NULL
      );
      CREATE INDEX rollouts_by_account ON rollouts (account_id, created_at);
      CREATE INDEX rollouts_by_state ON rollouts (state);
      CREATE TABLE rollout_terminals (
        rollout_id text NOT NULL REFERENCES rollouts(id),
        terminal_id text NOT NULL,
        wave integer NOT NULL,
        ordered_at text NOT NULL,
        result text,
        reason text,
        reported_at text,
        PRIMARY KEY (rollout_id, terminal_id)
      );
    `,
  },
  {
    version: 7,
    sql: `
      -- Grows with every change of a terminal's POS credentials (local mode's verifiers).
      CREATE TABLE terminal_credential_revisions (
        terminal_id text PRIMARY KEY,
        revision bigint NOT NULL
      );
      CREATE INDEX credentials_by_terminal ON credentials (terminal_id);
    `,
  },
  {
    version: 8,
    sql: `
      -- Search pages newest first by creation, then id: ids named by their pair (local
      -- mode) are not time-ordered.
      ALTER TABLE transactions ADD COLUMN created_at text NOT NULL DEFAULT '';
      UPDATE transactions SET created_at = body::json->>'created_at';
      DROP INDEX transactions_by_account;
      CREATE INDEX transactions_by_account ON transactions (account_id, created_at, id);
    `,
  },
  {
    version: 9,
    sql: `
      -- Many merchants on one relay (docs/tenants.md): the accounts there were are merchants'.
      ALTER TABLE accounts ADD COLUMN kind text NOT NULL DEFAULT 'merchant';
      ALTER TABLE accounts ADD COLUMN name text;
      ALTER TABLE accounts ADD COLUMN disabled_at text;
    `,
  },
  {
    version: 10,
    sql: `
      -- Which settings of an account's layer the operator gave: they count even while
      -- merchants may not set them (docs/fleet.md). Layers before were the merchant's.
      ALTER TABLE config_layers ADD COLUMN operator_settings text NOT NULL DEFAULT '[]';
      -- The relay-wide layer of configuration and which settings merchants may set: one row.
      CREATE TABLE relay_fleet_config (
        id integer PRIMARY KEY CHECK (id = 1),
        layer text NOT NULL DEFAULT '{}',
        layer_updated_at text,
        merchant_settings text,
        merchant_settings_updated_at text
      );
    `,
  },
];

/**
 * Applies the migrations not yet applied, in one transaction under an advisory lock (the
 * schema is created under it too), and answers the schema the tables are in.
 */
export async function migrate(pool: pg.Pool, schema: string | undefined): Promise<string> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`);
    if (schema !== undefined) await client.query(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await client.query(
      'CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at text NOT NULL)',
    );
    const { rows } = await client.query<{ version: number }>(
      'SELECT version FROM schema_migrations',
    );
    const applied = new Set(rows.map((row) => row.version));
    refuseNewerSchema(
      'the relay database',
      Math.max(0, ...applied),
      Math.max(...POSTGRES_MIGRATIONS.map((m) => m.version)),
    );
    for (const migration of POSTGRES_MIGRATIONS) {
      if (applied.has(migration.version)) continue;
      await client.query(migration.sql);
      await client.query('INSERT INTO schema_migrations (version, applied_at) VALUES ($1, $2)', [
        migration.version,
        new Date().toISOString(),
      ]);
    }
    const current = await client.query<{ name: string }>('SELECT current_schema() AS name');
    await client.query('COMMIT');
    client.release();
    return current.rows[0]!.name;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => {});
    client.release(true);
    throw error;
  }
}
