/**
 * The journal's outbox in memory (agent/journal.ts): the reports still owed to the relay,
 * in seq order, each as the JSON text the journal stored. The journal reads it instead of
 * the table (the link reads the outbox at every publish) and changes it only once a commit
 * that changes the table succeeded, or when a report is acknowledged (its delete is then
 * owed, see Journal.dropReport).
 */

import type { TerminalReport } from '../protocol/terminal-link.js';

export interface OutboxEntry {
  seq: number;
  type: TerminalReport['type'];
  /** The report's JSON text, as stored. */
  body: string;
  /** For a local transaction's report: whose, its amount, when it was written. */
  local?: { transactionId: string; amount: number; at: string };
}

/** Local transactions whose reports the relay has not yet acknowledged (docs/local-mode.md). */
export interface LocalBacklog {
  count: number;
  /** Their requested amounts together, in minor units (currencies not told apart). */
  total: number;
  /** When the oldest report still owed was written; absent when none is. */
  oldestAt?: string;
}

export class OutboxMirror {
  /**
   * `entries`: the outbox's rows in seq order, kept so: a new report's seq is above every
   * seq ever given (AUTOINCREMENT).
   */
  constructor(private readonly entries: OutboxEntry[]) {}

  add(entry: OutboxEntry): void {
    this.entries.push(entry);
  }

  /** Takes out `seq`; answers the entry taken, undefined when it was not there. */
  remove(seq: number): OutboxEntry | undefined {
    const at = this.count((s) => s < seq);
    if (this.entries[at]?.seq !== seq) return undefined;
    return this.entries.splice(at, 1)[0];
  }

  /** Each local transaction once, with its newest amount, however many reports it has waiting. */
  localBacklog(): LocalBacklog {
    const amounts = new Map<string, number>();
    let oldestAt: string | undefined;
    for (const { local } of this.entries) {
      if (!local) continue;
      amounts.set(local.transactionId, local.amount);
      if (oldestAt === undefined || local.at < oldestAt) oldestAt = local.at;
    }
    let total = 0;
    for (const amount of amounts.values()) total += amount;
    return { count: amounts.size, total, ...(oldestAt !== undefined ? { oldestAt } : {}) };
  }

  /** Takes out every status report. */
  removeStatuses(): void {
    for (let at = this.entries.length - 1; at >= 0; at--) {
      if (this.entries[at]!.type === 'status') this.entries.splice(at, 1);
    }
  }

  /** Up to `limit` reports after `afterSeq`, in seq order, as `{seq, body}`. */
  after(afterSeq: number, limit: number): Array<{ seq: number; body: string }> {
    const from = this.count((s) => s <= afterSeq);
    return this.entries.slice(from, from + limit).map(({ seq, body }) => ({ seq, body }));
  }

  /** The newest seq below `seq` (0: none). */
  before(seq: number): number {
    const at = this.count((s) => s < seq);
    return at > 0 ? this.entries[at - 1]!.seq : 0;
  }

  /** How many entries, from the first, have a seq that passes `test` (binary search). */
  private count(test: (seq: number) => boolean): number {
    let low = 0;
    let high = this.entries.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (test(this.entries[middle]!.seq)) low = middle + 1;
      else high = middle;
    }
    return low;
  }
}
