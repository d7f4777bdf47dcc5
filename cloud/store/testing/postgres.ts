/**
 * PostgreSQL for the test files of the PostgreSQL implementations: they run only when
 * DATABASE_URL is set, and say so when skipped; each store gets a schema of its own,
 * dropped once the file's tests are done.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, describe, it } from 'vitest';

export const DATABASE_URL = process.env.DATABASE_URL;

/** A visible skip, naming what would have run. */
export function skippedWithoutDatabase(title: string, what: string): void {
  describe(`${title} (DATABASE_URL)`, () => {
    it.skip(`SKIPPED, DATABASE_URL is not set (e.g. postgres://postgres@127.0.0.1:5432/test): ${what}`, () => {});
  });
}

/** Runs `work` on a connection of the test's own (a "third" one, beside the relays'). */
export async function admin<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Fresh schema names, each dropped after the calling file's tests. */
export function testSchemas(url: string): () => string {
  const schemas = new Set<string>();
  afterAll(async () => {
    await admin(url, async (client) => {
      for (const schema of schemas) await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    });
  });
  return () => {
    const schema = `tps_test_${randomBytes(6).toString('hex')}`;
    schemas.add(schema);
    return schema;
  };
}

/** `url` with an application name, by which the test finds the connections made with it. */
export function namedUrl(url: string, applicationName: string): string {
  const named = new URL(url);
  named.searchParams.set('application_name', applicationName);
  return named.toString();
}
