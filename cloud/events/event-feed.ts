/**
 * In-process notice of committed events, per account. Event-list long polls and webhook
 * deliverers park here; they read the events themselves from the store.
 */
import type { EventRecord } from '../store/records.js';

/** What a parked reader needs to know to decide whether to read again. */
export type EventNotice = Pick<EventRecord, 'accountId' | 'subject' | 'kind'>;
/** `undefined`: events of unknown kind may have been committed (another relay's). */
type Listener = (event: EventNotice | undefined) => void;

export class EventFeed {
  private readonly listeners = new Map<string, Set<Listener>>();

  subscribe(accountId: string, listener: Listener): () => void {
    let set = this.listeners.get(accountId);
    if (!set) {
      set = new Set();
      this.listeners.set(accountId, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(accountId) === set) {
        this.listeners.delete(accountId);
      }
    };
  }

  publish(events: readonly EventNotice[]): void {
    for (const event of events) {
      const set = this.listeners.get(event.accountId);
      if (set) for (const listener of [...set]) listener(event);
    }
  }

  /** Wakes every parked reader to read again. */
  nudge(): void {
    for (const set of this.listeners.values()) for (const listener of [...set]) listener(undefined);
  }

  get size(): number {
    let n = 0;
    for (const set of this.listeners.values()) n += set.size;
    return n;
  }
}
