/** The relay's store as configured: PostgreSQL with TPS_DATABASE_URL, else SQLite in the data directory. */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import type { CloudConfig } from '../config.js';
import { SqliteStore } from './sqlite.js';
import type { Store } from './store.js';

export async function openStore(
  config: Pick<CloudConfig, 'databaseUrl' | 'dataDir'>,
  options: { mustExist?: boolean; logger?: Logger } = {},
): Promise<Store> {
  if (config.databaseUrl) {
    // Loaded only when used: the embedded default never needs the pg driver.
    const { PostgresStore } = await import('./postgres.js');
    return PostgresStore.open(config.databaseUrl, options.logger ? { logger: options.logger } : {});
  }
  const file = path.join(config.dataDir, 'relay.sqlite');
  if (options.mustExist && !fs.existsSync(file)) {
    throw new Error(
      `no relay store at ${file}: point --data-dir or TPS_DATA_DIR at the relay's data directory, or set TPS_DATABASE_URL`,
    );
  }
  return new SqliteStore(file, options.logger ? { logger: options.logger } : {});
}
