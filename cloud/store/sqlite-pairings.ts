/**
 * The SQLite store's pairings by a code (part of ports/fleet.ts): the writes run in the
 * writer's shared commit (sqlite-writes.ts), the read on the relay thread's connection. A
 * claim creates the terminal and appends its event in its commit; a collection stores the
 * agent's credential in its.
 */
import type Database from 'better-sqlite3';
import type { NewEvent, PairingClaimOutcome, PairingRecord, TerminalRecord } from './records.js';
import {
  PAIRING_KEPT_MS,
  insertTerminalSql,
  pairingClaimOutcome,
  terminalValues,
  toPairing,
  type PairingRow,
} from './rows.js';
import { toEventWrite, type WriteSteps } from './sqlite-write-steps.js';

/** The writes, as operations the writer thread runs. */
export function pairingWrites(db: Database.Database, steps: WriteSteps) {
  return {
    createPairing(p: PairingRecord): boolean {
      const keptFrom = new Date(Date.parse(p.createdAt) - PAIRING_KEPT_MS).toISOString();
      db.prepare('DELETE FROM pairings WHERE expires_at < ?').run(keptFrom);
      const { changes } = db
        .prepare(
          `INSERT INTO pairings (secret_hash, code, created_at, expires_at) VALUES (?, ?, ?, ?)
           ON CONFLICT (code) DO NOTHING`,
        )
        .run(p.secretHash, p.code, p.createdAt, p.expiresAt);
      return changes === 1;
    },

    claimPairing(a: {
      code: string;
      claim: NonNullable<PairingRecord['claim']>;
      terminal: TerminalRecord;
      event: NewEvent;
    }): PairingClaimOutcome {
      const row = db
        .prepare<[string], PairingRow>('SELECT * FROM pairings WHERE code = ?')
        .get(a.code);
      const outcome = pairingClaimOutcome(row, a.claim.claimedAt);
      if (outcome !== 'claimed') return outcome;
      db.prepare('UPDATE pairings SET claim = ? WHERE code = ?').run(
        JSON.stringify(a.claim),
        a.code,
      );
      db.prepare(insertTerminalSql(() => '?')).run(terminalValues(a.terminal));
      steps.appendEvent(toEventWrite(a.event));
      return outcome;
    },

    collectPairing(a: { secretHash: string; agentSecretHash: string; at: string }): boolean {
      const row = db
        .prepare<[string, string], { terminal_id: string }>(
          `UPDATE pairings SET claim = json_set(claim, '$.collectedAt', ?)
           WHERE secret_hash = ? AND claim IS NOT NULL
             AND json_extract(claim, '$.collectedAt') IS NULL
           RETURNING json_extract(claim, '$.terminalId') AS terminal_id`,
        )
        .get(a.at, a.secretHash);
      if (!row) return false;
      db.prepare(
        `INSERT INTO agent_credentials (terminal_id, secret_hash, created_at) VALUES (?, ?, ?)
         ON CONFLICT (terminal_id) DO UPDATE SET secret_hash = excluded.secret_hash`,
      ).run(row.terminal_id, a.agentSecretHash, a.at);
      return true;
    },
  };
}

/** The read. */
export function pairingReads(db: Database.Database) {
  return {
    findPairing(secretHash: string): PairingRecord | undefined {
      const row = db
        .prepare<[string], PairingRow>('SELECT * FROM pairings WHERE secret_hash = ?')
        .get(secretHash);
      return row ? toPairing(row) : undefined;
    },
  };
}
