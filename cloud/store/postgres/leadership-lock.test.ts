/**
 * The PostgreSQL leadership lock (a session advisory lock per schema) through the
 * leadership lock conformance suite: the locks of relays on one schema, the holder's
 * session found and ended from a connection of the test's own; and the leader's probe,
 * which a stall of the leading process must not mistake for a lost session. Runs only when
 * DATABASE_URL is set.
 */
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import type { LeadershipLock } from '../../cluster/leadership-lock.js';
import { leadershipLockConformance } from '../testing/leadership-lock-conformance.js';
import { DATABASE_URL, admin, skippedWithoutDatabase, testSchemas } from '../testing/postgres.js';
import { sleep, until } from '../testing/until.js';
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

  describe('PostgreSQL leadership lock, probed while leading', () => {
    it('keeps the lead through a stall of its own process longer than the probe may wait', async () => {
      // The stall starts just after a probe has left, so that its answer arrives while the
      // process is busy, as under a starved CPU.
      const PROBE_TIMEOUT_MS = 100;
      let stallAfterProbe = false;
      let stalls = 0;
      const query = pg.Client.prototype.query;
      pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
        const sent = (query as (...a: unknown[]) => unknown).apply(this, args);
        if (stallAfterProbe && args[0] === 'SELECT 1') {
          stallAfterProbe = false;
          // Once the probe waits for its answer (its timer set): the process stalls.
          queueMicrotask(() => {
            const stallEnd = Date.now() + 3 * PROBE_TIMEOUT_MS;
            while (Date.now() < stallEnd);
            stalls++;
          });
        }
        return sent;
      } as typeof query;
      const schema = freshSchema();
      const lock = new PostgresLeadershipLock(
        connectionConfig(url, schema),
        schema,
        20,
        silent,
        PROBE_TIMEOUT_MS,
      );
      let leads = 0;
      let losses = 0;
      lock.start(
        () => leads++,
        () => losses++,
      );
      try {
        await until(() => leads === 1);
        for (let i = 0; i < 3; i++) {
          stallAfterProbe = true;
          await until(() => stalls === i + 1);
        }
        // The probes after the stalls are answered too: still the one lead, never lost.
        await sleep(5 * PROBE_TIMEOUT_MS);
        expect({ leads, losses }).toEqual({ leads: 1, losses: 0 });
      } finally {
        pg.Client.prototype.query = query;
        await lock.stop();
      }
    });
  });
}
