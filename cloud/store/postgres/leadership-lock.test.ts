/**
 * The PostgreSQL leadership lock (a session advisory lock per schema) through the
 * leadership lock conformance suite: the locks of relays on one schema, the holder's
 * session found and ended from a connection of the test's own. Runs only when
 * DATABASE_URL is set.
 */
import type { LeadershipLock } from '../../cluster/leadership-lock.js';
import { leadershipLockConformance } from '../testing/leadership-lock-conformance.js';
import { DATABASE_URL, admin, skippedWithoutDatabase, testSchemas } from '../testing/postgres.js';
import { connectionConfig, silent } from './connection.js';
import { PostgresLeadershipLock } from './leadership-lock.js';

if (!DATABASE_URL) {
  skippedWithoutDatabase(
    'PostgreSQL leadership lock',
    'the leadership lock conformance suite on PostgreSQL: one holder, handed over when its session dies, let go by stop()',
  );
} else {
  const url = DATABASE_URL;
  const freshSchema = testSchemas(url);
  const schemaOf = new Map<LeadershipLock, string>();

  leadershipLockConformance('PostgreSQL', {
    async open(n, retryMs) {
      // The lock needs no tables: its key is the schema's name.
      const schema = freshSchema();
      return Array.from({ length: n }, () => {
        const lock = new PostgresLeadershipLock(
          connectionConfig(url, schema),
          schema,
          retryMs,
          silent,
        );
        schemaOf.set(lock, schema);
        return lock;
      });
    },
    holders: (locks) =>
      admin(url, async (client) => {
        const { rows } = await client.query<{ pid: number }>(
          `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2
             AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
             AND objid = (hashtext($1)::bigint & 4294967295)::oid`,
          [schemaOf.get(locks[0]!)],
        );
        return rows.map(({ pid }) => ({
          end: () =>
            admin(url, async (other) => {
              await other.query('SELECT pg_terminate_backend($1)', [pid]);
            }),
        }));
      }),
  });
}
