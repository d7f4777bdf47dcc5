/** The PostgreSQL store's agent releases (Store.addRelease and the rest): rows only, never changed. */
import type pg from 'pg';
import type { ReleaseRecord } from '../records.js';
import { RELEASE_COLUMNS, releaseValues, toRelease, type ReleaseRow } from '../rows.js';

type Queryable = Pick<pg.Pool, 'query'>;

/** False when the account has published this version for this architecture already. */
export async function addRelease(db: Queryable, release: ReleaseRecord): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO releases (${RELEASE_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
     ON CONFLICT DO NOTHING`,
    [...releaseValues(release)],
  );
  return rowCount === 1;
}

export async function findRelease(
  db: Queryable,
  accountId: string,
  version: string,
  arch: string,
): Promise<ReleaseRecord | undefined> {
  const { rows } = await db.query<ReleaseRow>(
    'SELECT * FROM releases WHERE account_id = $1 AND version = $2 AND arch = $3',
    [accountId, version, arch],
  );
  return rows[0] ? toRelease(rows[0]) : undefined;
}

/**
 * A release moves unless the account has its version and arch already, or another account
 * published them earlier (ports/fleet.ts).
 */
export async function adoptReleases(db: Queryable, accountId: string): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE releases AS moved SET account_id = $1
     WHERE moved.account_id <> $1 AND NOT EXISTS (
       SELECT 1 FROM releases AS other
       WHERE other.version = moved.version AND other.arch = moved.arch
         AND (other.account_id = $1
           OR other.published_at < moved.published_at
           OR (other.published_at = moved.published_at AND other.account_id < moved.account_id)))`,
    [accountId],
  );
  return rowCount ?? 0;
}

export async function listReleases(db: Queryable, accountId: string): Promise<ReleaseRecord[]> {
  const { rows } = await db.query<ReleaseRow>(
    'SELECT * FROM releases WHERE account_id = $1 ORDER BY published_at DESC, version DESC',
    [accountId],
  );
  return rows.map(toRelease);
}
