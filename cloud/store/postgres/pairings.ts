/**
 * The PostgreSQL store's pairings (see Store.createPairing, claimPairing, collectPairing).
 * A claim locks the pairing's row, so of two claims of one code in any processes one wins;
 * the terminal, the claim and its event commit together, the event's notice with them
 * (change-bus.ts). A collection's UPDATE locks the row too: of two, the second finds it
 * collected.
 */
import type pg from 'pg';
import type { ChangeNotice } from '../../cluster/change-bus.js';
import type { NewEvent, PairingClaimOutcome, PairingRecord, TerminalRecord } from '../records.js';
import {
  PAIRING_KEPT_MS,
  pairingClaimOutcome,
  insertTerminalSql,
  terminalValues,
  toPairing,
  type PairingRow,
} from '../rows.js';
import { CHANNEL } from './change-bus.js';

export async function createPairing(pool: pg.Pool, p: PairingRecord): Promise<boolean> {
  const keptFrom = new Date(Date.parse(p.createdAt) - PAIRING_KEPT_MS).toISOString();
  await pool.query('DELETE FROM pairings WHERE expires_at < $1', [keptFrom]);
  const { rowCount } = await pool.query(
    `INSERT INTO pairings (secret_hash, code, created_at, expires_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (code) DO NOTHING`,
    [p.secretHash, p.code, p.createdAt, p.expiresAt],
  );
  return rowCount === 1;
}

export async function findPairing(
  pool: pg.Pool,
  secretHash: string,
): Promise<PairingRecord | undefined> {
  const { rows } = await pool.query<PairingRow>('SELECT * FROM pairings WHERE secret_hash = $1', [
    secretHash,
  ]);
  return rows[0] ? toPairing(rows[0]) : undefined;
}

/** Runs inside a transaction the caller opened on `client`, and commits it. */
export async function claimPairing(
  client: pg.PoolClient,
  notice: (change: ChangeNotice) => string,
  a: {
    code: string;
    claim: NonNullable<PairingRecord['claim']>;
    terminal: TerminalRecord;
    event: NewEvent;
  },
): Promise<PairingClaimOutcome> {
  await client.query('BEGIN');
  const { rows } = await client.query<PairingRow>(
    'SELECT * FROM pairings WHERE code = $1 FOR UPDATE',
    [a.code],
  );
  const outcome = pairingClaimOutcome(rows[0], a.claim.claimedAt);
  if (outcome !== 'claimed') {
    await client.query('ROLLBACK');
    return outcome;
  }
  const { event } = a;
  await client.query('UPDATE pairings SET claim = $1 WHERE code = $2', [
    JSON.stringify(a.claim),
    a.code,
  ]);
  await client.query(
    insertTerminalSql((n) => `$${n}`),
    terminalValues(a.terminal),
  );
  // The event's position is taken last, as every commit takes it (statements.ts, logQuery).
  await client.query(
    `WITH pos AS (UPDATE event_positions SET last = last + 1 RETURNING last)
     INSERT INTO events (position, id, account_id, subject, kind, time, data)
     SELECT pos.last, $1, $2, $3, $4, $5, $6 FROM pos`,
    [event.id, event.accountId, event.subject, event.kind, event.time, JSON.stringify(event.data)],
  );
  await client.query('SELECT pg_notify($1, $2)', [
    CHANNEL,
    notice({
      kind: 'events',
      events: [{ accountId: event.accountId, subject: event.subject, kind: event.kind }],
    }),
  ]);
  await client.query('COMMIT');
  return outcome;
}

/** Runs inside a transaction the caller opened on `client`, and commits it. */
export async function collectPairing(
  client: pg.PoolClient,
  a: { secretHash: string; agentSecretHash: string; at: string },
): Promise<boolean> {
  await client.query('BEGIN');
  const { rows } = await client.query<{ terminal_id: string }>(
    `UPDATE pairings SET claim = (claim::jsonb || jsonb_build_object('collectedAt', $1::text))::text
     WHERE secret_hash = $2 AND claim IS NOT NULL AND claim::jsonb->>'collectedAt' IS NULL
     RETURNING claim::jsonb->>'terminalId' AS terminal_id`,
    [a.at, a.secretHash],
  );
  const terminalId = rows[0]?.terminal_id;
  if (terminalId === undefined) {
    await client.query('ROLLBACK');
    return false;
  }
  await client.query(
    `INSERT INTO agent_credentials (terminal_id, secret_hash, created_at) VALUES ($1, $2, $3)
     ON CONFLICT (terminal_id) DO UPDATE SET secret_hash = excluded.secret_hash`,
    [terminalId, a.agentSecretHash, a.at],
  );
  await client.query('COMMIT');
  return true;
}
