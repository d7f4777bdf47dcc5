/**
 * One relay process per SQLite data directory: the store keeps transactions in memory
 * (see KEPT_TRANSACTIONS in sqlite.ts), the due deadlines and the embedded broker run per process,
 * so a second relay on the same file would answer from a stale memory. The lock is an
 * exclusive SQLite transaction held on a small file beside the store: the operating
 * system drops it when the process ends, however it ends, so it is never stale.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

export const LOCK_FILE = 'relay.lock';

export class DataDirInUse extends Error {
  constructor(dataDir: string) {
    super(
      `another relay is using the data directory ${dataDir} (it holds ${path.join(dataDir, LOCK_FILE)}): ` +
        'stop it, or give this relay its own --data-dir / TPS_DATA_DIR; several relays share a store through TPS_DATABASE_URL',
    );
    this.name = 'DataDirInUse';
  }
}

/** Takes the data directory for this process until release(); throws DataDirInUse if taken. */
export function lockDataDir(dataDir: string): { release(): void } {
  fs.mkdirSync(dataDir, { recursive: true });
  // No busy wait: a held lock means another relay, not a moment's contention.
  const db = new Database(path.join(dataDir, LOCK_FILE), { timeout: 0 });
  try {
    db.pragma('locking_mode = EXCLUSIVE');
    db.exec('BEGIN EXCLUSIVE');
  } catch (error) {
    db.close();
    if ((error as { code?: string }).code === 'SQLITE_BUSY') throw new DataDirInUse(dataDir);
    throw error;
  }
  return { release: () => db.close() };
}
