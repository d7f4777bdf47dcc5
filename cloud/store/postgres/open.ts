/**
 * Opens what relays sharing one PostgreSQL database use: the store, the change bus and
 * the leadership lock, on the schema migrated first. All three are scoped to the
 * schema: relays of another schema in the database are not this relay's peers.
 */
import { randomBytes } from 'node:crypto';
import type { Sender } from './change-bus.js';
import { PostgresChangeBus } from './change-bus.js';
import { connectionConfig, openPool, silent, type Logger } from './connection.js';
import { PostgresLeadershipLock } from './leadership-lock.js';
import { migrate } from './migrations.js';
import { PostgresStore } from './store.js';

export interface PostgresOptions {
  /** The schema the tables live in (created if missing); default: the search_path's first. */
  schema?: string;
  /** Connections of the pool (default 8); the bus and the lock use one more each. */
  poolSize?: number;
  /**
   * Batches of writes committing at once, each on a connection of the pool (default 2;
   * at most poolSize).
   */
  batchConcurrency?: number;
  /** Writes in one batch at most (default 200): one transaction holds their locks. */
  batchSize?: number;
  /** How often the lock is tried again while another relay holds it, in ms (default 1000). */
  leaderRetryMs?: number;
  /** Told of what the store recovers from or ignores (a lost connection, a foreign notification). */
  logger?: Logger;
}

/**
 * The bus and the lock each use a connection of their own, opened when first used; the
 * bus announces through the store's pool. close() ends all three.
 */
export async function openPostgres(url: string, options: PostgresOptions = {}) {
  const connection = connectionConfig(url, options.schema);
  const logger = options.logger ?? silent;
  const poolSize = options.poolSize ?? 8;
  const pool = openPool(connection, poolSize, logger);
  let schema: string;
  try {
    schema = await migrate(pool, options.schema);
  } catch (error) {
    await pool.end();
    throw error;
  }
  // Tells this relay's own notices from the other processes'.
  const sender: Sender = { origin: randomBytes(8).toString('hex'), schema };
  const store = new PostgresStore(
    pool,
    sender,
    {
      concurrency: Math.max(1, Math.min(options.batchConcurrency ?? 2, poolSize)),
      size: Math.max(1, options.batchSize ?? 200),
    },
    logger,
  );
  const bus = new PostgresChangeBus(pool, connection, sender, logger);
  const lock = new PostgresLeadershipLock(
    connection,
    schema,
    options.leaderRetryMs ?? 1000,
    logger,
  );
  return {
    store,
    bus,
    lock,
    async close(): Promise<void> {
      // The writes queued are answered first; the pool ends last.
      await store.drain();
      await Promise.all([bus.close(), lock.stop()]);
      await store.close();
    },
  };
}
