/**
 * The PostgreSQL store: the conformance suite, then what only a shared store has (changes
 * seen by the other processes, leadership, migrations by several at once). Runs only when
 * DATABASE_URL is set; each store gets a schema of its own, dropped at the end.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { POSTGRES_MIGRATIONS } from './postgres-migrations.js';
import { PostgresStore } from './postgres.js';
import { storeConformance, terminalRecord } from './store-conformance.js';
import type { Store, StoreChange } from './store.js';

const DATABASE_URL = process.env.DATABASE_URL;
const NOW = '2026-11-21T12:00:00.000Z';

if (!DATABASE_URL) {
  describe('PostgreSQL store (DATABASE_URL)', () => {
    it.skip('SKIPPED, DATABASE_URL is not set (e.g. postgres://postgres@127.0.0.1:5432/test): the store conformance suite on PostgreSQL, changes seen across processes, leadership handed over when its session dies, concurrent migrations', () => {});
  });
} else {
  const url = DATABASE_URL;
  const schemas = new Set<string>();
  const schemaOf = new Map<Store, string>();
  const freshSchema = () => {
    const schema = `tps_test_${randomBytes(6).toString('hex')}`;
    schemas.add(schema);
    return schema;
  };
  const open = async (schema: string, options: { leaderRetryMs?: number } = {}) => {
    const store = await PostgresStore.open(url, { schema, ...options });
    schemaOf.set(store, schema);
    return store;
  };
  /** Runs `work` on a connection of the test's own (the "third" one). */
  const admin = async <T>(work: (client: pg.Client) => Promise<T>): Promise<T> => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return await work(client);
    } finally {
      await client.end();
    }
  };
  /** Polls until `check` holds, or fails after `ms`. */
  const until = async (check: () => boolean | Promise<boolean>, ms = 5000, what = 'condition') => {
    const deadline = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  afterAll(async () => {
    await admin(async (client) => {
      for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    });
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
    it('stores opened at once on a fresh schema migrate it once, without error', async () => {
      const schema = freshSchema();
      const stores = await Promise.all([open(schema), open(schema), open(schema)]);
      await Promise.all(stores.map((store) => store.close()));
      const versions = await admin(
        async (client) =>
          (await client.query(`SELECT version FROM ${schema}.schema_migrations ORDER BY version`))
            .rows,
      );
      expect(versions).toEqual(POSTGRES_MIGRATIONS.map(({ version }) => ({ version })));
    });

    it('the database refuses a second transaction for the same pair', async () => {
      const schema = freshSchema();
      await (await open(schema)).close();
      await admin(async (client) => {
        await client.query(`SET search_path = ${schema}`);
        await client.query("INSERT INTO accounts VALUES ('a', 'now')");
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

    it("watch() shows the changes another process commits, not the store's own", async () => {
      const schema = freshSchema();
      const [mine, theirs] = await Promise.all([open(schema), open(schema)]);
      await mine.ensureAccount('acct-1', NOW);
      await mine.createTerminal(terminalRecord('t-1'));
      const seen: StoreChange[] = [];
      const unwatch = mine.watch((change) => seen.push(change));
      // Listening: the first connection nudges, as one after a reconnect does.
      await until(() => seen.length > 0, 5000, 'the listening nudge');
      expect(seen).toEqual([{ kind: 'resync' }]);
      seen.length = 0;

      const change = (store: Store, externalId: string) =>
        store.changeTransaction({ terminalId: 't-1', externalId }, () => {
          const txn = {
            id: `txn-${externalId}`,
            terminal_id: 't-1',
            external_id: externalId,
            type: 'PURCHASE' as const,
            state: 'CONFIRMED' as const,
            created_at: NOW,
            updated_at: NOW,
          };
          return {
            write: { txn, accountId: 'acct-1', dueAt: NOW, version: 3 },
            commands: [
              {
                type: 'transaction.cancel' as const,
                command_id: `cmd-${externalId}`,
                transaction_id: txn.id,
              },
            ],
            events: [
              {
                id: `ev-${externalId}`,
                accountId: 'acct-1',
                subject: 't-1',
                kind: 'Transaction' as const,
                time: NOW,
                data: txn,
              },
            ],
            result: null,
          };
        });
      // Its own changes first: delivered in commit order, they would come before the others'.
      await change(mine, 'own');
      await mine.recordReport('t-1', { journal: 'j', seq: 1 });
      await mine.ackCommand('t-1', 'cmd-own', NOW);
      await mine.announce({ kind: 'webhooks' });

      await change(theirs, 'other');
      await theirs.ackCommand('t-1', 'cmd-other', NOW);
      await theirs.ackCommand('t-1', 'cmd-other', NOW); // acknowledged already: nothing to tell
      await theirs.recordReport('t-1', { journal: 'j', seq: 2 });
      await theirs.updateTerminalStatus('t-1', { battery_percentage: 50 }, NOW, 'ev-status');
      await theirs.announce({ kind: 'simulator', terminalId: 't-1' });
      const expected: StoreChange[] = [
        { kind: 'transaction', terminalId: 't-1', externalId: 'other', version: 3, dueAt: NOW },
        {
          kind: 'events',
          events: [{ accountId: 'acct-1', subject: 't-1', kind: 'Transaction' }],
        },
        { kind: 'command-acked', commandId: 'cmd-other' },
        { kind: 'report', terminalId: 't-1' },
        {
          kind: 'events',
          events: [{ accountId: 'acct-1', subject: 't-1', kind: 'TerminalStatus' }],
        },
        { kind: 'simulator', terminalId: 't-1' },
      ];
      await until(() => seen.length >= expected.length, 5000, 'the changes');
      expect(seen).toEqual(expected);

      // Too many events to list in a notification: the listeners are told to read again.
      await theirs.changeTransaction({ terminalId: 't-1', externalId: 'many' }, () => ({
        events: Array.from({ length: 100 }, (_, i) => ({
          id: `ev-many-${i}`,
          accountId: 'acct-1',
          subject: 't-1',
          kind: 'TerminalStatus' as const,
          time: NOW,
          data: { terminal_id: 't-1', updated_at: NOW },
        })),
        result: null,
      }));
      await until(() => seen.length > expected.length, 5000, 'the events notice');
      expect(seen.slice(expected.length)).toEqual([{ kind: 'events' }]);
      seen.length = expected.length;

      // A rolled-back change tells nothing; an unsubscribed listener hears nothing.
      await expect(
        theirs.changeTransaction({ terminalId: 't-1', externalId: 'refused' }, () => {
          throw new Error('refused');
        }),
      ).rejects.toThrow('refused');
      const more: StoreChange[] = [];
      mine.watch((c) => more.push(c));
      unwatch();
      await theirs.announce({ kind: 'webhooks' });
      await until(() => more.length > 0, 5000, 'the announcement');
      expect(more).toEqual([{ kind: 'webhooks' }]);
      expect(seen).toHaveLength(expected.length);
      await Promise.all([mine.close(), theirs.close()]);
    });

    it('watch() listens again after its connection is killed, and nudges its listeners', async () => {
      const schema = freshSchema();
      const [mine, theirs] = await Promise.all([open(schema), open(schema)]);
      const listening = () =>
        admin(async (client) => {
          const { rows } = await client.query<{ pid: number }>(
            "SELECT pid FROM pg_stat_activity WHERE query = 'LISTEN tps_changes' AND datname = current_database()",
          );
          return new Set(rows.map((row) => row.pid));
        });
      const before = await listening();
      const seen: StoreChange[] = [];
      mine.watch((change) => seen.push(change));
      await until(() => seen.length > 0, 5000, 'the listening nudge');
      const ours = [...(await listening())].filter((pid) => !before.has(pid));
      expect(ours).toHaveLength(1);
      seen.length = 0;
      await admin((client) => client.query('SELECT pg_terminate_backend($1)', [ours[0]]));
      await until(() => seen.length > 0, 5000, 'the nudge after reconnecting');
      expect(seen).toEqual([{ kind: 'resync' }]);
      await theirs.announce({ kind: 'webhooks' });
      await until(() => seen.length > 1, 5000, 'a change after reconnecting');
      expect(seen).toEqual([{ kind: 'resync' }, { kind: 'webhooks' }]);
      await Promise.all([mine.close(), theirs.close()]);
    });

    it('one of two processes leads; when its session is killed it loses the lead and one leads again; stop() hands it over', async () => {
      const schema = freshSchema();
      const stores = await Promise.all([
        open(schema, { leaderRetryMs: 200 }),
        open(schema, { leaderRetryMs: 200 }),
      ]);
      const leading = [false, false];
      const losses = [0, 0];
      const leaderships = stores.map((store, i) => {
        const leadership = store.leadership();
        leadership.start(
          () => (leading[i] = true),
          () => {
            leading[i] = false;
            losses[i]!++;
          },
        );
        return leadership;
      });
      const leaders = () => leading.filter(Boolean).length;
      await until(() => leaders() === 1, 5000, 'a leader');
      await new Promise((resolve) => setTimeout(resolve, 700)); // a few tries of the other
      expect(leaders()).toBe(1);
      const first = leading.indexOf(true);

      // The leader's session, found from a third connection by the lock it holds.
      const lockHolders = () =>
        admin(async (client) => {
          const { rows } = await client.query<{ pid: number }>(
            `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2
               AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
               AND objid = (hashtext($1)::bigint & 4294967295)::oid`,
            [schema],
          );
          return rows.map((row) => row.pid);
        });
      const holders = await lockHolders();
      expect(holders).toHaveLength(1);
      await admin((client) => client.query('SELECT pg_terminate_backend($1)', [holders[0]]));
      // The leader hears it lost the lead. Whoever tries first leads next: the other, or the
      // same process once it has reconnected (only its session died; a killed process's
      // does not come back, see test/cluster.test.ts). Within a retry period when quiet.
      await until(() => losses[first] === 1 && leaders() === 1, 15_000, 'a leader again');
      await new Promise((resolve) => setTimeout(resolve, 700)); // the other keeps trying
      expect(leaders()).toBe(1);
      expect(await lockHolders()).toHaveLength(1);

      // stop() lets the lock go at once: the other one takes it.
      const current = leading.indexOf(true);
      await leaderships[current]!.stop();
      await until(() => leading[1 - current] === true, 10_000, 'the other to lead');
      await Promise.all(stores.map((store) => store.close()));
      await until(async () => (await lockHolders()).length === 0, 10_000, 'the lock to go');
    }, 60_000);
  });
}
