/**
 * The PostgreSQL store: the store conformance suite, then what only a shared store has
 * (migrations by several processes at once, the database's own uniqueness). Runs only
 * when DATABASE_URL is set; each store gets a schema of its own, dropped at the end.
 */
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { systemClock } from '../../../common/clock.js';
import { bootstrapAccount } from '../../accounts/bootstrap.js';
import type { Store } from '../store.js';
import { storeConformance } from '../testing/store-conformance.js';
import { DATABASE_URL, admin, skippedWithoutDatabase, testSchemas } from '../testing/postgres.js';
import { POSTGRES_MIGRATIONS } from './migrations.js';
import { openPostgres } from './open.js';

if (!DATABASE_URL) {
  skippedWithoutDatabase(
    'PostgreSQL store',
    'the store conformance suite on PostgreSQL, concurrent migrations, the unique pair',
  );
} else {
  const url = DATABASE_URL;
  const freshSchema = testSchemas(url);
  const schemaOf = new Map<Store, string>();
  const open = async (schema: string) => {
    const { store } = await openPostgres(url, { schema });
    schemaOf.set(store, schema);
    return store;
  };

  /**
   * A schema as a release whose migrations stopped at `version` left it, filled by `seed`
   * with that release's rows (for the tests of upgrades).
   */
  const schemaAtVersion = (
    schema: string,
    version: number,
    seed: (client: pg.Client) => Promise<void>,
  ) =>
    admin(url, async (client) => {
      await client.query(`CREATE SCHEMA ${schema}`);
      await client.query(`SET search_path = ${schema}`);
      await client.query(
        'CREATE TABLE schema_migrations (version integer PRIMARY KEY, applied_at text NOT NULL)',
      );
      for (const migration of POSTGRES_MIGRATIONS.filter((m) => m.version <= version)) {
        await client.query(migration.sql);
        await client.query('INSERT INTO schema_migrations VALUES ($1, $2)', [
          migration.version,
          'then',
        ]);
      }
      await seed(client);
    });

  storeConformance('PostgreSQL', {
    open: () => open(freshSchema()),
    async reopen(store) {
      await store.close();
      return open(schemaOf.get(store)!);
    },
    peer: (store) => open(schemaOf.get(store)!),
  });

  describe('PostgreSQL store specifics', () => {
    it('refuses a database written by a newer release, saying what to run', async () => {
      const schema = freshSchema();
      await (await open(schema)).close();
      await admin(url, (client) =>
        client.query(
          `INSERT INTO ${schema}.schema_migrations (version, applied_at) VALUES (999, 'now')`,
        ),
      );
      await expect(open(schema)).rejects.toThrow(
        /has schema version 999, newer than this release knows .*run that release or a newer one/,
      );
    });

    it('stores opened at once on a fresh schema migrate it once, without error', async () => {
      const schema = freshSchema();
      const stores = await Promise.all([open(schema), open(schema), open(schema)]);
      await Promise.all(stores.map((store) => store.close()));
      const versions = await admin(
        url,
        async (client) =>
          (await client.query(`SELECT version FROM ${schema}.schema_migrations ORDER BY version`))
            .rows,
      );
      expect(versions).toEqual(POSTGRES_MIGRATIONS.map(({ version }) => ({ version })));
    });

    it('a database of schema version 3 is brought up to date: paired terminals get their name and cohort', async () => {
      const schema = freshSchema();
      await schemaAtVersion(schema, 3, async (client) => {
        await client.query("INSERT INTO accounts VALUES ('acct-1', 'then')");
        await client.query(
          "INSERT INTO terminals (id, account_id, kind, capabilities, status, created_at) VALUES ('t-paired', 'acct-1', 'AGENT', '{}', '{}', 'then')",
        );
        await client.query(
          "INSERT INTO pairings (secret_hash, code, created_at, expires_at, claim) VALUES ('h', 'ABCD2345', 'then', 'then', $1)",
          [JSON.stringify({ terminalId: 't-paired', name: 'Front till', cohort: 'cohort-front' })],
        );
      });
      const store = await open(schema);
      expect(await store.getTerminal('t-paired')).toMatchObject({
        name: 'Front till',
        cohort: 'cohort-front',
      });
      await store.close();
    });

    it("a database of today's accounts (schema version 8) is brought up to date: its account is a merchant's, its releases the operator's", async () => {
      const schema = freshSchema();
      await schemaAtVersion(schema, 8, async (client) => {
        await client.query("INSERT INTO accounts VALUES ('acct-1', 'then')");
        await client.query(
          "INSERT INTO credentials VALUES ('acct-user', 'hash', 'acct-1', NULL, 'then')",
        );
        await client.query(
          "INSERT INTO releases VALUES ('acct-1', '1.0.0', 'linux-x64', '{}', 'c2ln', $1, 1, 'r.tar.gz', 'then')",
          ['a'.repeat(64)],
        );
        await client.query("INSERT INTO settings VALUES ('default_account_id', 'acct-1')");
      });
      const store = await open(schema);
      expect(await store.listAccounts()).toEqual([
        { id: 'acct-1', kind: 'merchant', createdAt: 'then' },
      ]);
      expect(await store.findCredential('acct-user')).toMatchObject({ accountId: 'acct-1' });
      // The first start after the upgrade makes the operator, who has the account's releases.
      const { operatorAccountId } = await bootstrapAccount(store, {}, systemClock);
      expect(await store.findRelease(operatorAccountId, '1.0.0', 'linux-x64')).toMatchObject({
        archiveSha256: 'a'.repeat(64),
      });
      await store.close();
    });

    it('the database refuses a second transaction for the same pair', async () => {
      const schema = freshSchema();
      await (await open(schema)).close();
      await admin(url, async (client) => {
        await client.query(`SET search_path = ${schema}`);
        await client.query("INSERT INTO accounts (id, created_at) VALUES ('a', 'now')");
        await client.query(
          "INSERT INTO terminals (id, account_id, kind, capabilities, status, created_at) VALUES ('t', 'a', 'SIMULATOR', '{}', '{}', 'now')",
        );
        const insert = (id: string) =>
          client.query(
            "INSERT INTO transactions (id, terminal_id, external_id, account_id, state, version, body) VALUES ($1, 't', 'same', 'a', 'PROCESSING', 1, '{}')",
            [id],
          );
        await insert('txn-1');
        await expect(insert('txn-2')).rejects.toThrow(/unique/);
      });
    });
  });
}
