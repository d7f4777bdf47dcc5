/**
 * The PostgreSQL change bus (LISTEN/NOTIFY) through the change bus conformance suite:
 * relays on one schema, each opened as a relay process opens it. Runs only when
 * DATABASE_URL is set.
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import { changeBusConformance, type BusRelay } from '../testing/change-bus-conformance.js';
import {
  DATABASE_URL,
  admin,
  namedUrl,
  skippedWithoutDatabase,
  testSchemas,
} from '../testing/postgres.js';
import { CHANNEL } from './change-bus.js';
import { openPostgres } from './open.js';

if (!DATABASE_URL) {
  skippedWithoutDatabase(
    'PostgreSQL change bus',
    "the change bus conformance suite on PostgreSQL: another relay's commits and announcements heard, not one's own; listening again after the connection drops",
  );
} else {
  const url = DATABASE_URL;
  const freshSchema = testSchemas(url);
  /** Each relay's schema, and the application name its connections carry. */
  const relays = new Map<BusRelay, { schema: string; name: string }>();
  const open = async (schema: string): Promise<BusRelay> => {
    const name = `tps_test_${randomBytes(6).toString('hex')}`;
    const relay = await openPostgres(namedUrl(url, name), { schema });
    relays.set(relay, { schema, name });
    return relay;
  };

  changeBusConformance('PostgreSQL', {
    open: () => open(freshSchema()),
    peer: (relay) => open(relays.get(relay)!.schema),
    async dropConnection(relay) {
      const { name } = relays.get(relay)!;
      await admin(url, async (client) => {
        // The bus listens on a connection of its own, found by what it last ran.
        const { rows } = await client.query<{ pid: number }>(
          'SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND query = $2',
          [name, `LISTEN ${CHANNEL}`],
        );
        expect(rows).toHaveLength(1);
        await client.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      });
    },
  });
}
