/**
 * The PostgreSQL store's connections: how each is configured (int8 as numbers, the
 * schema on the search_path), the pool the store's statements run on, a connection
 * taken from it that logs rather than crashes when it drops, and the pipelining that
 * sends a group of statements in one write to the socket.
 */
import pg from 'pg';

/** Told of what the store recovers from or ignores (a lost connection, a foreign notification). */
export interface Logger {
  warn(details: object, message: string): void;
}
export const silent: Logger = { warn: () => {} };

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** int8 (counts, positions, sequence numbers) as numbers: they stay far below 2^53. */
const INT8_OID = 20;
const types: pg.CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === INT8_OID && format !== 'binary'
      ? (value: string) => Number(value)
      : pg.types.getTypeParser(oid, format)) as pg.CustomTypesConfig['getTypeParser'],
};

/** How every connection to the database at `url` is made, with `schema` first on its path. */
export function connectionConfig(url: string, schema: string | undefined): pg.ClientConfig {
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    throw new Error(
      `invalid schema name ${JSON.stringify(schema)}: lower-case letters, digits and _`,
    );
  }
  return {
    connectionString: url,
    types,
    ...(schema !== undefined ? { options: `-c search_path=${schema}` } : {}),
  };
}

export function openPool(connection: pg.ClientConfig, size: number, logger: Logger): pg.Pool {
  const pool = new pg.Pool({
    ...connection,
    // Statements go out without waiting for the answers before them (see together()).
    pipeline: true,
    max: size,
    // A process stalled inside a transaction (its terminal's row locked) lets go in time.
    idle_in_transaction_session_timeout: 30_000,
  });
  // An idle connection that drops is taken out of the pool; without a listener its
  // error would end the process.
  pool.on('error', (error) => logger.warn({ err: error }, 'PostgreSQL pool connection lost'));
  return pool;
}

/**
 * A connection of the pool. Should it drop while checked out, its queries fail, and the
 * error it emits is logged rather than left to end the process (the pool listens only
 * while the connection is idle); release() takes the listener off again.
 */
export async function checkout(pool: pg.Pool, logger: Logger): Promise<pg.PoolClient> {
  const client = await pool.connect();
  const lost = (error: Error) =>
    logger.warn({ err: error }, 'PostgreSQL connection lost while in use');
  client.on('error', lost);
  const release = client.release.bind(client);
  client.release = (error?: Error | boolean) => {
    // A connection released with an error is ended: it may still report one.
    if (!error) client.off('error', lost);
    release(error);
  };
  return client;
}

/** withClient bound to a pool, as the store's ports run their transactions. */
export type WithClient = <T>(work: (client: pg.PoolClient) => Promise<T>) => Promise<T>;

/** Runs `work` on a connection of the pool; on failure rolls back what it left open. */
export async function withClient<T>(
  pool: pg.Pool,
  logger: Logger,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  const client = await checkout(pool, logger);
  try {
    const result = await work(client);
    client.release();
    return result;
  } catch (error) {
    try {
      // A no-op (with a warning from the server) when no transaction is open.
      await client.query('ROLLBACK');
      client.release();
    } catch (rollbackError) {
      client.release(rollbackError as Error);
    }
    throw error;
  }
}

/**
 * Sends what `send` queries (pipelined, the connection does not wait for answers) in one
 * write to the socket rather than one each.
 */
function together<T>(client: pg.PoolClient, send: () => T): T {
  const { stream } = client.connection;
  stream.cork();
  try {
    return send();
  } finally {
    stream.uncork();
  }
}

/** The statement of a group that failed first, with what the sender tagged it with. */
export interface Failed<Owner> {
  error: unknown;
  owner?: Owner;
  part?: string;
}

/**
 * Sends the statements `send` queries together (see together()) and waits for all of
 * them; answers the first that failed (those after it fail as the transaction is aborted).
 */
export async function exchange<Owner>(
  client: pg.PoolClient,
  send: (
    query: (
      config: pg.QueryConfig | string,
      owner?: Owner,
      part?: string,
    ) => Promise<pg.QueryResult>,
  ) => void,
): Promise<Failed<Owner> | undefined> {
  const sent: Array<{ result: Promise<pg.QueryResult>; owner?: Owner; part?: string }> = [];
  together(client, () =>
    send((config, owner, part) => {
      const result = client.query(config);
      sent.push({ result, ...(owner ? { owner } : {}), ...(part ? { part } : {}) });
      return result;
    }),
  );
  const settled = await Promise.allSettled(sent.map(({ result }) => result));
  const i = settled.findIndex(({ status }) => status === 'rejected');
  if (i < 0) return undefined;
  const { owner, part } = sent[i]!;
  return {
    error: (settled[i] as PromiseRejectedResult).reason,
    ...(owner ? { owner } : {}),
    ...(part ? { part } : {}),
  };
}
