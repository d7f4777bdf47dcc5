/**
 * In-process notifications of committed transaction changes, keyed by (terminal,
 * external id). Long polls park here instead of polling the store.
 */
import type { TransactionRecord } from '../store/records.js';

type Listener = (record: TransactionRecord) => void;

const keyOf = (terminalId: string, externalId: string) => `${terminalId}\u0000${externalId}`;

export class ChangeFeed {
  private readonly listeners = new Map<string, Set<Listener>>();

  subscribe(terminalId: string, externalId: string, listener: Listener): () => void {
    const key = keyOf(terminalId, externalId);
    let set = this.listeners.get(key);
    if (!set) {
      set = new Set();
      this.listeners.set(key, set);
    }
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(key) === set) this.listeners.delete(key);
    };
  }

  publish(record: TransactionRecord): void {
    const set = this.listeners.get(keyOf(record.txn.terminal_id, record.txn.external_id));
    if (!set) return;
    for (const listener of [...set]) listener(record);
  }

  /** The (terminal, external id) of every transaction something waits on. */
  *waitedOn(): Iterable<[terminalId: string, externalId: string]> {
    for (const key of this.listeners.keys()) {
      const [terminalId, externalId] = key.split('\u0000') as [string, string];
      yield [terminalId, externalId];
    }
  }

  has(terminalId: string, externalId: string): boolean {
    return this.listeners.has(keyOf(terminalId, externalId));
  }

  /** Parked listeners, for metrics and leak tests. */
  get size(): number {
    let n = 0;
    for (const set of this.listeners.values()) n += set.size;
    return n;
  }
}
