/**
 * The store's event log, read by position and trimmed by retention, and the webhooks that
 * deliver it. Events are appended by the writes that tell them, in their commit
 * (TransactionStore.changeTransaction, TerminalStore.updateTerminalStatus and
 * appendSettlement, FleetStore.claimPairing); this port reads and trims.
 */
import type { EventQuery, EventRecord, WebhookRecord } from '../records.js';

export interface EventStore {
  /** Events in log order. */
  readEvents(query: EventQuery): Promise<EventRecord[]>;
  countEvents(query: Omit<EventQuery, 'limit'>): Promise<number>;
  /** The newest position written, and the newest one deleted by retention (0: none). */
  eventBounds(): Promise<{ latest: number; trimmedThrough: number }>;
  /** Deletes events older than `olderThan` and below `keepFrom`; answers the new trimmedThrough. */
  trimEvents(olderThan: string, keepFrom: number): Promise<number>;

  createWebhook(webhook: WebhookRecord): Promise<void>;
  getWebhook(id: string): Promise<WebhookRecord | undefined>;
  listWebhooks(accountId?: string): Promise<WebhookRecord[]>;
  updateWebhook(id: string, patch: Partial<Omit<WebhookRecord, 'id' | 'accountId'>>): Promise<void>;
  deleteWebhook(id: string): Promise<void>;
}
