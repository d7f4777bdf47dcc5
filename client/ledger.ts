/**
 * The client's view of its journal: the latest entry of every payment it is working on,
 * written through to the journal in order. A change is decided synchronously against
 * the latest entry (so the create loop, the confirm loop and an abort never overwrite
 * each other's news) and resolves once it is durable. Waiters for a payment's
 * settlement are woken only by durable writes.
 */
import {
  UNSETTLED_PHASES,
  entryKey,
  unknownPayment,
  type Journal,
  type JournalEntry,
} from './journal.js';

type Waiter = (entry: JournalEntry | undefined) => void;

const FINAL = new Set(['SETTLED', 'CONFLICT', 'REFUSED']);

export class Ledger {
  private readonly cache = new Map<string, JournalEntry>();
  private readonly writes = new Map<string, Promise<unknown>>();
  private readonly waiters = new Map<string, Waiter[]>();

  constructor(
    readonly journal: Journal,
    private readonly now: () => string,
  ) {}

  current(key: string): JournalEntry | undefined {
    return this.cache.get(key);
  }

  async load(terminalId: string, externalId: string): Promise<JournalEntry | undefined> {
    const key = entryKey(terminalId, externalId);
    const cached = this.cache.get(key);
    if (cached) return cached;
    const stored = await this.journal.get(terminalId, externalId);
    // Another load may have filled the cache meanwhile; the cache wins (it is newer).
    if (stored && !this.cache.has(key)) this.cache.set(key, stored);
    return this.cache.get(key);
  }

  async unsettled(terminalId?: string): Promise<JournalEntry[]> {
    const stored = await this.journal.unsettled(terminalId);
    return stored
      .map((entry) => {
        const key = entryKey(entry.terminalId, entry.externalId);
        if (!this.cache.has(key)) this.cache.set(key, entry);
        return this.cache.get(key)!;
      })
      .filter((entry) => UNSETTLED_PHASES.includes(entry.phase));
  }

  async insert(entry: JournalEntry): Promise<JournalEntry> {
    await this.journal.insert(entry);
    this.cache.set(entryKey(entry.terminalId, entry.externalId), entry);
    return entry;
  }

  /**
   * Applies `change` to the latest entry at once and resolves when that is durable.
   * `change` may answer the entry unchanged (nothing is written) or throw (nothing is).
   */
  mutate(key: string, change: (entry: JournalEntry) => JournalEntry): Promise<JournalEntry> {
    const latest = this.cache.get(key);
    if (!latest) {
      const [terminalId = '', externalId = ''] = key.split('\u0000');
      return Promise.reject(unknownPayment(terminalId, externalId));
    }
    let next: JournalEntry;
    try {
      next = change(latest);
    } catch (error) {
      return Promise.reject(error);
    }
    if (next === latest) return (this.writes.get(key) ?? Promise.resolve()).then(() => latest);
    next = { ...next, updatedAt: this.now() };
    this.cache.set(key, next);
    const previous = this.writes.get(key) ?? Promise.resolve();
    const written = previous
      .catch(() => {})
      .then(() => this.journal.update(next))
      .then(() => {
        if (FINAL.has(next.phase)) this.wake(key, next);
        return next;
      });
    this.writes.set(key, written);
    void written.finally(() => {
      if (this.writes.get(key) === written) this.writes.delete(key);
    });
    return written;
  }

  /** Resolves with the entry once it is durably final, or with undefined on release(). */
  whenFinal(key: string): Promise<JournalEntry | undefined> {
    const latest = this.cache.get(key);
    if (latest && FINAL.has(latest.phase) && !this.writes.has(key)) {
      return Promise.resolve(latest);
    }
    return new Promise((resolve) => {
      const list = this.waiters.get(key) ?? [];
      list.push(resolve);
      this.waiters.set(key, list);
    });
  }

  /** Waits for every write begun so far. */
  async flush(): Promise<void> {
    await Promise.allSettled([...this.writes.values()]);
  }

  /** Wakes every waiter without a final entry (the client is closing). */
  release(): void {
    for (const [key, list] of this.waiters) {
      this.waiters.delete(key);
      for (const wake of list) wake(undefined);
    }
  }

  private wake(key: string, entry: JournalEntry): void {
    const list = this.waiters.get(key);
    if (!list) return;
    this.waiters.delete(key);
    for (const wake of list) wake(entry);
  }
}

export { entryKey };
