/**
 * The PostgreSQL store's event log and webhooks (ports/events.ts). Events are appended by
 * the writes of other ports, in their commit (writes.ts, pairings.ts); here they are read
 * and trimmed.
 */
import type pg from 'pg';
import type { EventStore } from '../ports/events.js';
import type { EventQuery, EventRecord, WebhookRecord } from '../records.js';
import { TRIMMED_SETTING, toEvent, type EventRow } from '../rows.js';
import type { WithClient } from './connection.js';
import { eventWhere } from './statements.js';

export function postgresEvents(pool: pg.Pool, withClient: WithClient): EventStore {
  return {
    async readEvents(query: EventQuery): Promise<EventRecord[]> {
      if (query.kind === null) return [];
      const { sql, values } = eventWhere(query);
      const { rows } = await pool.query<EventRow>(
        `SELECT position, id, account_id, subject, kind, time, data FROM events
       WHERE ${sql} ORDER BY position LIMIT $${values.length + 1}`,
        [...values, query.limit],
      );
      return rows.map(toEvent);
    },

    async countEvents(query: Omit<EventQuery, 'limit'>): Promise<number> {
      if (query.kind === null) return 0;
      const { sql, values } = eventWhere(query);
      const { rows } = await pool.query<{ n: number }>(
        `SELECT count(*) AS n FROM events WHERE ${sql}`,
        values,
      );
      return rows[0]?.n ?? 0;
    },

    async eventBounds(): Promise<{ latest: number; trimmedThrough: number }> {
      // The counter keeps the highest position ever given, even once it is deleted.
      const { rows } = await pool.query<{ latest: number; trimmed: string | null }>(
        `SELECT (SELECT last FROM event_positions) AS latest,
              (SELECT value FROM settings WHERE key = $1) AS trimmed`,
        [TRIMMED_SETTING],
      );
      return { latest: rows[0]?.latest ?? 0, trimmedThrough: Number(rows[0]?.trimmed ?? 0) };
    },

    trimEvents(olderThan: string, keepFrom: number): Promise<number> {
      return withClient(async (client) => {
        const [, found] = await Promise.all([
          client.query('BEGIN'),
          client.query<{ last: number | null; previous: string | null }>(
            `SELECT (SELECT max(position) FROM events WHERE time < $1 AND position < $2) AS last,
                  (SELECT value FROM settings WHERE key = $3) AS previous`,
            [olderThan, keepFrom, TRIMMED_SETTING],
          ),
        ]);
        const last = found.rows[0]?.last ?? null;
        const previous = Number(found.rows[0]?.previous ?? 0);
        if (last === null || last <= previous) {
          await client.query('COMMIT');
          return previous;
        }
        await Promise.all([
          client.query('DELETE FROM events WHERE position <= $1', [last]),
          // Only ever forward, should two processes trim at once.
          client.query(
            `INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE
           SET value = excluded.value WHERE settings.value::bigint < excluded.value::bigint`,
            [TRIMMED_SETTING, String(last)],
          ),
          client.query('COMMIT'),
        ]);
        return last;
      });
    },

    async createWebhook(webhook: WebhookRecord): Promise<void> {
      await pool.query('INSERT INTO webhooks (id, account_id, body) VALUES ($1, $2, $3)', [
        webhook.id,
        webhook.accountId,
        JSON.stringify(webhook),
      ]);
    },

    async getWebhook(id: string): Promise<WebhookRecord | undefined> {
      const { rows } = await pool.query<{ body: string }>(
        'SELECT body FROM webhooks WHERE id = $1',
        [id],
      );
      return rows[0] ? JSON.parse(rows[0].body) : undefined;
    },

    async listWebhooks(accountId?: string): Promise<WebhookRecord[]> {
      const { rows } = accountId
        ? await pool.query<{ body: string }>(
            'SELECT body FROM webhooks WHERE account_id = $1 ORDER BY id',
            [accountId],
          )
        : await pool.query<{ body: string }>('SELECT body FROM webhooks ORDER BY id');
      return rows.map((row) => JSON.parse(row.body));
    },

    updateWebhook(
      id: string,
      patch: Partial<Omit<WebhookRecord, 'id' | 'accountId'>>,
    ): Promise<void> {
      return withClient(async (client) => {
        const [, found] = await Promise.all([
          client.query('BEGIN'),
          client.query<{ body: string }>('SELECT body FROM webhooks WHERE id = $1 FOR UPDATE', [
            id,
          ]),
        ]);
        const row = found.rows[0];
        if (!row) {
          await client.query('COMMIT');
          return;
        }
        const next: Record<string, unknown> = { ...JSON.parse(row.body), ...patch };
        // An explicit undefined clears a member.
        for (const [key, value] of Object.entries(patch)) if (value === undefined) delete next[key];
        await Promise.all([
          client.query('UPDATE webhooks SET body = $1 WHERE id = $2', [JSON.stringify(next), id]),
          client.query('COMMIT'),
        ]);
      });
    },

    async deleteWebhook(id: string): Promise<void> {
      await pool.query('DELETE FROM webhooks WHERE id = $1', [id]);
    },
  };
}
