/**
 * The PostgreSQL store's rollouts (Store.createRollout and the rest). Creating one
 * supersedes its cohort's others in the same transaction; an update is conditional on
 * the revision it was decided from, so two relays never both move one rollout.
 */
import type pg from 'pg';
import type { RolloutRecord } from '../records.js';
import {
  ROLLOUT_COLUMNS,
  rolloutTerminalValues,
  rolloutUpdateValues,
  rolloutValues,
  toRollout,
  type RolloutRow,
  type RolloutTerminalRow,
} from '../rollout-rows.js';

type Queryable = Pick<pg.PoolClient, 'query'>;

const INSERT_TERMINAL = `INSERT INTO rollout_terminals
  (rollout_id, terminal_id, wave, ordered_at, result, reason, reported_at)
  VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`;

async function addTerminals(client: Queryable, r: RolloutRecord): Promise<void> {
  for (const t of r.terminals)
    await client.query(INSERT_TERMINAL, [...rolloutTerminalValues(r.id, t)]);
}

/** Runs inside a transaction the caller opened on `client`, and commits it. */
export async function createRollout(client: pg.PoolClient, r: RolloutRecord): Promise<void> {
  await client.query('BEGIN');
  await client.query(
    `UPDATE rollouts SET state = 'superseded', superseded_by = $1, updated_at = $2, revision = revision + 1
     WHERE account_id = $3 AND cohort = $4 AND state IN ('running', 'paused')`,
    [r.id, r.createdAt, r.accountId, r.cohort],
  );
  await client.query(
    `INSERT INTO rollouts (${ROLLOUT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)`,
    [...rolloutValues(r)],
  );
  await addTerminals(client, r);
  await client.query('COMMIT');
}

/** Runs inside a transaction the caller opened on `client`, and commits it. */
export async function updateRollout(
  client: pg.PoolClient,
  r: RolloutRecord,
  revision: number,
): Promise<boolean> {
  await client.query('BEGIN');
  const { rowCount } = await client.query(
    `UPDATE rollouts SET state = $1, wave = $2, wave_started_at = $3, paused_reason = $4,
       superseded_by = $5, updated_at = $6, revision = $7 WHERE id = $8 AND revision = $9`,
    [...rolloutUpdateValues(r, revision)],
  );
  if (rowCount !== 1) {
    await client.query('ROLLBACK');
    return false;
  }
  await addTerminals(client, r);
  await client.query('COMMIT');
  return true;
}

export async function recordRolloutOutcome(
  pool: pg.Pool,
  rolloutId: string,
  terminalId: string,
  outcome: { result: string; reason?: string; at: string },
): Promise<boolean> {
  const { rowCount } = await pool.query(
    `UPDATE rollout_terminals SET result = $1, reason = $2, reported_at = $3
     WHERE rollout_id = $4 AND terminal_id = $5`,
    [outcome.result, outcome.reason ?? null, outcome.at, rolloutId, terminalId],
  );
  return rowCount === 1;
}

async function withTerminals(pool: pg.Pool, rows: RolloutRow[]): Promise<RolloutRecord[]> {
  if (rows.length === 0) return [];
  const { rows: terminals } = await pool.query<RolloutTerminalRow>(
    `SELECT * FROM rollout_terminals WHERE rollout_id = ANY($1)
     ORDER BY wave, ordered_at, terminal_id`,
    [rows.map((r) => r.id)],
  );
  return rows.map((row) => toRollout(row, terminals));
}

export async function getRollout(pool: pg.Pool, id: string): Promise<RolloutRecord | undefined> {
  const { rows } = await pool.query<RolloutRow>('SELECT * FROM rollouts WHERE id = $1', [id]);
  return (await withTerminals(pool, rows))[0];
}

export async function listRollouts(
  pool: pg.Pool,
  filter: { accountId?: string; state?: RolloutRecord['state'] },
): Promise<RolloutRecord[]> {
  const { rows } = await pool.query<RolloutRow>(
    `SELECT * FROM rollouts WHERE ($1::text IS NULL OR account_id = $1)
       AND ($2::text IS NULL OR state = $2) ORDER BY created_at DESC, id DESC`,
    [filter.accountId ?? null, filter.state ?? null],
  );
  return withTerminals(pool, rows);
}

/** The cohort kept with the terminal, as its pairing's claim chose it. */
export async function cohortTerminals(
  pool: pg.Pool,
  accountId: string,
  cohort: string,
): Promise<Array<{ id: string; connected: boolean }>> {
  const { rows } = await pool.query<{ id: string; status: string }>(
    'SELECT id, status FROM terminals WHERE account_id = $1 AND cohort = $2 ORDER BY id',
    [accountId, cohort],
  );
  return rows.map((row) => ({
    id: row.id,
    connected: (JSON.parse(row.status) as { connected?: boolean }).connected === true,
  }));
}
