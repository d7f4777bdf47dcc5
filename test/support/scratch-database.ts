/** PostgreSQL databases of a test's own, on the server of DATABASE_URL. */
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import type { CloudConfigInput } from '../../cloud/config.js';
import { startTestRelay, type TestRelay } from './relay.js';

/** Makes a database named after `prefix` (and the process), and says how to drop it. */
export async function createScratchDatabase(
  serverUrl: string,
  prefix: string,
): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${process.pid}_${Date.now()}`;
  const admin = async (sql: string) => {
    const client = new pg.Client({ connectionString: serverUrl });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/**
 * Two relays in this process on one scratch database, started before the suite's tests and
 * closed (and the database dropped) after them.
 */
export function twoRelaysOnOneDatabase(
  serverUrl: string,
  prefix: string,
  overrides: Parameters<typeof startTestRelay>[0] = {},
): { readonly a: TestRelay; readonly b: TestRelay } {
  let database: Awaited<ReturnType<typeof createScratchDatabase>> | undefined;
  const relays: TestRelay[] = [];
  beforeAll(async () => {
    database = await createScratchDatabase(serverUrl, prefix);
    relays.push(await startTestRelay({ ...overrides, databaseUrl: database.url }));
    relays.push(await startTestRelay({ ...overrides, databaseUrl: database.url }));
  });
  afterAll(async () => {
    for (const relay of relays) await relay.close();
    await database?.drop();
  });
  return {
    get a() {
      return relays[0]!;
    },
    get b() {
      return relays[1]!;
    },
  };
}

/** Where a test's relay keeps its data: a SQLite file of its own, or a scratch PostgreSQL database. */
export interface StorePlace {
  name: 'SQLite' | 'PostgreSQL';
  /** The database to give the relay (none: SQLite in its data directory), and how to drop it. */
  place(): Promise<{ databaseUrl?: string; drop(): Promise<void> }>;
}

/**
 * Each store the tests reach: SQLite always, PostgreSQL when DATABASE_URL names a server
 * (a scratch database named from `prefix`). For `describe.each`: the same cases on both.
 */
export function eachStore(prefix: string): StorePlace[] {
  const serverUrl = process.env.DATABASE_URL;
  const sqlite: StorePlace = { name: 'SQLite', place: async () => ({ drop: async () => {} }) };
  if (!serverUrl) return [sqlite];
  return [
    sqlite,
    {
      name: 'PostgreSQL',
      async place() {
        const database = await createScratchDatabase(serverUrl, prefix);
        return { databaseUrl: database.url, drop: () => database.drop() };
      },
    },
  ];
}

/** A test relay on one store, and how to stop it (and drop its database). */
export interface RelayOnStore {
  name: StorePlace['name'];
  start(): Promise<{ relay: TestRelay; stop(): Promise<void> }>;
}

/** A relay with `settings` on each store the tests reach (eachStore), dropped at stop. */
export function relayOnEachStore(
  settings: Partial<CloudConfigInput>,
  prefix: string,
): RelayOnStore[] {
  return eachStore(prefix).map(({ name, place }) => ({
    name,
    async start() {
      const { databaseUrl, drop } = await place();
      const relay = await startTestRelay({ ...settings, ...(databaseUrl ? { databaseUrl } : {}) });
      return {
        relay,
        async stop() {
          await relay.close();
          await drop();
        },
      };
    },
  }));
}
