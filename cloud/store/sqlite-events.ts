/**
 * The SQLite store's event log and webhooks (ports/events.ts): the writes run in the
 * writer's shared commit (sqlite-writes.ts), the reads on the relay thread's connection.
 * Events are appended by the writes of other ports, in their commit (sqlite-write-steps.ts).
 */
import type Database from 'better-sqlite3';
import type { EventStore } from './ports/events.js';
import type { EventQuery, WebhookRecord } from './records.js';
import { TRIMMED_SETTING, toEvent, type EventRow } from './rows.js';
import type { QueuesWrites, WriteSteps } from './sqlite-write-steps.js';

/** The writes, as operations the writer thread runs. */
export function eventWrites(db: Database.Database, steps: WriteSteps) {
  const webhookBody = db.prepare<[string], { body: string }>(
    'SELECT body FROM webhooks WHERE id = ?',
  );
  return {
    trimEvents(a: { olderThan: string; keepFrom: number }): number {
      const last = db
        .prepare<[string, number], { position: number | null }>(
          'SELECT max(position) AS position FROM events WHERE time < ? AND position < ?',
        )
        .get(a.olderThan, a.keepFrom)?.position;
      const previous = Number(steps.setting(TRIMMED_SETTING) ?? 0);
      if (last === null || last === undefined || last <= previous) return previous;
      db.prepare('DELETE FROM events WHERE position <= ?').run(last);
      steps.putSetting(TRIMMED_SETTING, String(last));
      return last;
    },

    createWebhook(webhook: WebhookRecord): void {
      db.prepare('INSERT INTO webhooks (id, account_id, body) VALUES (?, ?, ?)').run(
        webhook.id,
        webhook.accountId,
        JSON.stringify(webhook),
      );
    },

    updateWebhook(a: {
      id: string;
      patch: Partial<Omit<WebhookRecord, 'id' | 'accountId'>>;
    }): void {
      const row = webhookBody.get(a.id);
      if (!row) return;
      const next: Record<string, unknown> = { ...JSON.parse(row.body), ...a.patch };
      // An explicit undefined clears a member.
      for (const [key, value] of Object.entries(a.patch)) if (value === undefined) delete next[key];
      db.prepare('UPDATE webhooks SET body = ? WHERE id = ?').run(JSON.stringify(next), a.id);
    },

    deleteWebhook(a: { id: string }): void {
      db.prepare('DELETE FROM webhooks WHERE id = ?').run(a.id);
    },
  };
}

type EventWrites = ReturnType<typeof eventWrites>;

/** The port, its reads here and its writes queued to the writer. */
export function sqliteEvents(db: Database.Database, writer: QueuesWrites<EventWrites>): EventStore {
  return {
    async readEvents(query) {
      if (query.kind === null) return [];
      const { sql, params } = eventWhere(query);
      return db
        .prepare<unknown[], EventRow>(`SELECT * FROM events WHERE ${sql} ORDER BY position LIMIT ?`)
        .all(...params, query.limit)
        .map(toEvent);
    },

    async countEvents(query) {
      if (query.kind === null) return 0;
      const { sql, params } = eventWhere(query);
      return (
        db
          .prepare<unknown[], { n: number }>(`SELECT count(*) AS n FROM events WHERE ${sql}`)
          .get(...params)?.n ?? 0
      );
    },

    async eventBounds() {
      // sqlite_sequence keeps the highest position ever given, even once it is deleted.
      const latest =
        db
          .prepare<[], { seq: number }>("SELECT seq FROM sqlite_sequence WHERE name = 'events'")
          .get()?.seq ?? 0;
      const trimmed = Number(
        db
          .prepare<[string], { value: string }>('SELECT value FROM settings WHERE key = ?')
          .get(TRIMMED_SETTING)?.value ?? 0,
      );
      return { latest, trimmedThrough: trimmed };
    },

    trimEvents: (olderThan, keepFrom) =>
      writer.write({ op: 'trimEvents', arg: { olderThan, keepFrom } }),

    createWebhook: (webhook) => writer.write({ op: 'createWebhook', arg: webhook }),

    async getWebhook(id) {
      const row = db
        .prepare<[string], { body: string }>('SELECT body FROM webhooks WHERE id = ?')
        .get(id);
      return row ? JSON.parse(row.body) : undefined;
    },

    async listWebhooks(accountId) {
      const rows = accountId
        ? db
            .prepare<[string], { body: string }>(
              'SELECT body FROM webhooks WHERE account_id = ? ORDER BY id',
            )
            .all(accountId)
        : db.prepare<[], { body: string }>('SELECT body FROM webhooks ORDER BY id').all();
      return rows.map((row) => JSON.parse(row.body));
    },

    updateWebhook: (id, patch) => writer.write({ op: 'updateWebhook', arg: { id, patch } }),

    deleteWebhook: (id) => writer.write({ op: 'deleteWebhook', arg: { id } }),
  };
}

function eventWhere(query: Omit<EventQuery, 'limit'>): { sql: string; params: unknown[] } {
  const clauses = ['account_id = ?', 'position > ?'];
  const params: unknown[] = [query.accountId, query.after];
  if (query.subject !== undefined) {
    clauses.push('subject = ?');
    params.push(query.subject);
  }
  if (query.kind !== undefined && query.kind !== null) {
    clauses.push('kind = ?');
    params.push(query.kind);
  }
  return { sql: clauses.join(' AND '), params };
}
