/**
 * One timer per transaction with something due (a grace period ending, a pause timing
 * out). Armed from each committed change and, after a restart, from the store once.
 */
import type { Clock } from '../clock.js';
import type { TransactionRecord } from '../store/records.js';

/** setTimeout's ceiling; longer waits re-arm on expiry. */
const MAX_DELAY_MS = 2_147_483_647;

export class DueTimers {
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly clock: Clock,
    private readonly onDue: (record: TransactionRecord) => Promise<void>,
  ) {}

  arm(record: TransactionRecord): void {
    const id = record.txn.id;
    const existing = this.timers.get(id);
    if (existing) clearTimeout(existing);
    this.timers.delete(id);
    if (!record.dueAt) return;
    const delay = Date.parse(record.dueAt) - this.clock.now().getTime();
    const timer = setTimeout(
      () => {
        this.timers.delete(id);
        if (delay > MAX_DELAY_MS) this.arm(record);
        else void this.onDue(record);
      },
      Math.min(Math.max(delay, 0), MAX_DELAY_MS),
    );
    timer.unref();
    this.timers.set(id, timer);
  }

  clear(): void {
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
  }

  get size(): number {
    return this.timers.size;
  }
}
