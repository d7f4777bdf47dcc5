/**
 * The change bus between relay processes that share one store: each hears what the others
 * commit or announce, so that what waits on it here (long polls, event-list waits,
 * deadlines, webhook deliveries, hosted simulators) wakes or re-reads. A notice never
 * precedes the data it tells of: a commit's notices go out with the commit, and only if
 * it commits. A notice only says where to look again; the store holds the data.
 */
import type { EventRecord } from '../store/records.js';

/** A change committed (or announced) by another relay process sharing the store. */
export type ChangeNotice =
  | { kind: 'transaction'; terminalId: string; externalId: string; version: number; dueAt?: string }
  /** Events appended; without `events`, readers should simply read again. */
  | { kind: 'events'; events?: Array<Pick<EventRecord, 'accountId' | 'subject' | 'kind'>> }
  | { kind: 'command-acked'; commandId: string }
  | { kind: 'report'; terminalId: string }
  /** Webhooks were created, deleted or re-enabled: the deliverer brings itself in line. */
  | { kind: 'webhooks' }
  /** A simulated terminal was created: the relay that hosts simulators starts it. */
  | { kind: 'simulator'; terminalId: string }
  /**
   * A credential was revoked or rotated: what was verified of it is forgotten, and for an
   * agent's, the sessions it opened end.
   */
  | { kind: 'credential'; type: 'API' | 'AGENT'; username: string }
  /** An account was disabled or enabled: what is kept of it is read again (docs/tenants.md). */
  | { kind: 'account'; accountId: string }
  /**
   * A pairing was claimed: its agent's wait parked here reads it again. Without `code`,
   * every pairing wait does.
   */
  | { kind: 'pairing'; code?: string }
  /** Listening (again) after a gap: changes may have been missed; read again what waits. */
  | { kind: 'resync' };

export interface ChangeBus {
  /**
   * Calls `listener` with each notice of the other relay processes: their commits' and
   * their announcements, never this process's own. Each time the bus starts listening
   * (again, after its connection dropped) it delivers `{ kind: 'resync' }`: notices may
   * have been missed meanwhile. Answers a function that unsubscribes.
   */
  subscribe(listener: (notice: ChangeNotice) => void): () => void;
  /** Tells the other relay processes of a change made outside a transaction's commit. */
  announce(notice: ChangeNotice): Promise<void>;
  /** Stops listening: no listener hears anything after it. */
  close(): Promise<void>;
}
