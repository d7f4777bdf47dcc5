/**
 * The SQLite store's rollouts (Store.createRollout and the rest): the writes run in the
 * writer's shared commit (sqlite-writes.ts), the reads on the relay thread's connection.
 */
import type Database from 'better-sqlite3';
import type { RolloutRecord } from './records.js';
import {
  ROLLOUT_COLUMNS,
  rolloutTerminalValues,
  rolloutUpdateValues,
  rolloutValues,
  toRollout,
  type RolloutRow,
  type RolloutTerminalRow,
} from './rollout-rows.js';

export function rolloutWrites(db: Database.Database) {
  const addTerminal = (rolloutId: string, t: RolloutRecord['terminals'][number]) =>
    db
      .prepare(
        `INSERT INTO rollout_terminals (rollout_id, terminal_id, wave, ordered_at, result, reason, reported_at)
         VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
      )
      .run(...rolloutTerminalValues(rolloutId, t));
  return {
    createRollout(r: RolloutRecord): void {
      db.prepare(
        `UPDATE rollouts SET state = 'superseded', superseded_by = ?, updated_at = ?, revision = revision + 1
         WHERE account_id = ? AND cohort = ? AND state IN ('running', 'paused')`,
      ).run(r.id, r.createdAt, r.accountId, r.cohort);
      db.prepare(
        `INSERT INTO rollouts (${ROLLOUT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(...rolloutValues(r));
      for (const t of r.terminals) addTerminal(r.id, t);
    },

    updateRollout(a: { rollout: RolloutRecord; revision: number }): boolean {
      const { changes } = db
        .prepare(
          `UPDATE rollouts SET state = ?, wave = ?, wave_started_at = ?, paused_reason = ?,
             superseded_by = ?, updated_at = ?, revision = ? WHERE id = ? AND revision = ?`,
        )
        .run(...rolloutUpdateValues(a.rollout, a.revision));
      if (changes !== 1) return false;
      for (const t of a.rollout.terminals) addTerminal(a.rollout.id, t);
      return true;
    },

    recordRolloutOutcome(a: {
      rolloutId: string;
      terminalId: string;
      result: string;
      reason?: string;
      at: string;
    }): boolean {
      const { changes } = db
        .prepare(
          `UPDATE rollout_terminals SET result = ?, reason = ?, reported_at = ?
           WHERE rollout_id = ? AND terminal_id = ?`,
        )
        .run(a.result, a.reason ?? null, a.at, a.rolloutId, a.terminalId);
      return changes === 1;
    },
  };
}

export function rolloutReads(db: Database.Database) {
  const withTerminals = (rows: RolloutRow[]): RolloutRecord[] => {
    if (rows.length === 0) return [];
    const terminals = db
      .prepare<unknown[], RolloutTerminalRow>(
        `SELECT * FROM rollout_terminals WHERE rollout_id IN (${rows.map(() => '?').join(', ')})
         ORDER BY wave, ordered_at, terminal_id`,
      )
      .all(...rows.map((r) => r.id));
    return rows.map((row) => toRollout(row, terminals));
  };
  return {
    getRollout(id: string): RolloutRecord | undefined {
      const row = db.prepare<[string], RolloutRow>('SELECT * FROM rollouts WHERE id = ?').get(id);
      return row ? withTerminals([row])[0] : undefined;
    },
    listRollouts(filter: { accountId?: string; state?: RolloutRecord['state'] }): RolloutRecord[] {
      const rows = db
        .prepare<[{ account: string | null; state: string | null }], RolloutRow>(
          `SELECT * FROM rollouts WHERE (@account IS NULL OR account_id = @account)
             AND (@state IS NULL OR state = @state) ORDER BY created_at DESC, id DESC`,
        )
        .all({ account: filter.accountId ?? null, state: filter.state ?? null });
      return withTerminals(rows);
    },
    cohortTerminals(accountId: string, cohort: string): Array<{ id: string; connected: boolean }> {
      // The cohort kept with the terminal, as its pairing's claim chose it.
      return db
        .prepare<[string, string], { id: string; status: string }>(
          'SELECT id, status FROM terminals WHERE account_id = ? AND cohort = ? ORDER BY id',
        )
        .all(accountId, cohort)
        .map((row) => ({
          id: row.id,
          connected: (JSON.parse(row.status) as { connected?: boolean }).connected === true,
        }));
    },
  };
}
