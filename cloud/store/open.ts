/**
 * What the relay keeps and shares, as configured: with TPS_DATABASE_URL, the PostgreSQL
 * store, its change bus (LISTEN/NOTIFY) and its leadership lock (an advisory lock), for
 * several relays on one database; else the SQLite store in the data directory, with the
 * embedded bus and lock of a relay that is alone on it.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import type { ChangeBus } from '../cluster/change-bus.js';
import { EmbeddedChangeBus, EmbeddedLeadershipLock } from '../cluster/embedded.js';
import type { LeadershipLock } from '../cluster/leadership-lock.js';
import type { CloudConfig } from '../config.js';
import { SqliteStore } from './sqlite.js';
import type { Store } from './store.js';

export interface Backend {
  store: Store;
  bus: ChangeBus;
  lock: LeadershipLock;
  /** Answers the writes queued, stops the bus and the lock, and closes the store. */
  close(): Promise<void>;
}

export async function openBackend(
  config: Pick<CloudConfig, 'databaseUrl' | 'dataDir'>,
  options: { mustExist?: boolean; logger?: Logger } = {},
): Promise<Backend> {
  if (config.databaseUrl) {
    // Loaded only when used: the embedded default never needs the pg driver.
    const { openPostgres } = await import('./postgres/open.js');
    return openPostgres(config.databaseUrl, options.logger ? { logger: options.logger } : {});
  }
  const file = path.join(config.dataDir, 'relay.sqlite');
  if (options.mustExist && !fs.existsSync(file)) {
    throw new Error(
      `no relay store at ${file}: point --data-dir or TPS_DATA_DIR at the relay's data directory, or set TPS_DATABASE_URL`,
    );
  }
  const store = new SqliteStore(file, options.logger ? { logger: options.logger } : {});
  const bus = new EmbeddedChangeBus();
  const lock = new EmbeddedLeadershipLock();
  return {
    store,
    bus,
    lock,
    async close() {
      await Promise.all([bus.close(), lock.stop()]);
      await store.close();
    },
  };
}
