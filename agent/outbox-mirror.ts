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
  private readonly entries: OutboxEntry[] = [];
  /**
   * The local transactions among the entries, kept as entries come and go: the backlog is
   * read at every local create (its bounds) and status, and a backlog made while the link
   * was down holds thousands of reports.
   */
  private readonly local = new Map<string, { amount: number; reports: number }>();
  private localTotal = 0;

  /**
   * `entries`: the outbox's rows in seq order, kept so: a new report's seq is above every
   * seq ever given (AUTOINCREMENT).
   */
  constructor(entries: OutboxEntry[]) {
    for (const entry of entries) this.add(entry);
  }

  add(entry: OutboxEntry): void {
    this.entries.push(entry);
    if (!entry.local) return;
    const { transactionId, amount } = entry.local;
    const held = this.local.get(transactionId);
    if (held) {
      this.localTotal += amount - held.amount;
      held.amount = amount;
      held.reports++;
    } else {
      this.local.set(transactionId, { amount, reports: 1 });
      this.localTotal += amount;
    }
  }

  /** Takes out `seq`; answers the entry taken, undefined when it was not there. */
  remove(seq: number): OutboxEntry | undefined {
    const at = this.count((s) => s < seq);
    if (this.entries[at]?.seq !== seq) return undefined;
    const [entry] = this.entries.splice(at, 1);
    if (entry?.local) {
      const held = this.local.get(entry.local.transactionId);
      if (held && --held.reports === 0) {
        this.local.delete(entry.local.transactionId);
        this.localTotal -= held.amount;
      }
    }
    return entry;
  }

  /** Each local transaction once, with its newest amount, however many reports it has waiting. */
  localBacklog(): LocalBacklog {
    if (this.local.size === 0) return { count: 0, total: 0 };
    // Reports are written in seq order, so the first local one is the oldest; only the few
    // other reports (statuses, a cloud payment's) can stand before it.
    const oldestAt = this.entries.find((entry) => entry.local)?.local?.at;
    return {
      count: this.local.size,
      total: this.localTotal,
      ...(oldestAt !== undefined ? { oldestAt } : {}),
    };
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
