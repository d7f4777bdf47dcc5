/**
 * What falls due (a grace period ending, a pause timing out) is kept in the store, not in
 * memory: one timer waits for the earliest deadline; when it fires, the due transactions
 * are read in batches and handed on, and the timer is set for the next deadline. A commit
 * with an earlier deadline moves the timer forward. Memory stays flat however many
 * transactions wait out their grace period.
 */
import { systemTimers, type Clock, type Timers } from '../../common/clock.js';
import type { TransactionRecord } from '../store/records.js';
import type { Store } from '../store/store.js';

const BATCH = 500;
/** setTimeout's ceiling; a later deadline is reached in steps. */
const MAX_DELAY_MS = 2_147_483_647;

export class DueScheduler {
  private timer: unknown;
  private target = Number.POSITIVE_INFINITY;
  private running = false;
  private again = false;
  private stopped = false;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly onDue: (record: TransactionRecord) => Promise<void>,
    private readonly timers: Timers = systemTimers,
  ) {}

  async start(): Promise<void> {
    this.stopped = false;
    const next = await this.store.nextDueAt();
    if (next) this.note(next);
  }

  /** Looks at the store's earliest deadline again (another relay's may have been missed). */
  async refresh(): Promise<void> {
    if (this.stopped) return;
    const next = await this.store.nextDueAt();
    if (next) this.note(next);
  }

  /** A committed change has something due at `dueAt`. */
  note(dueAt: string): void {
    const at = Date.parse(dueAt);
    if (this.stopped || at >= this.target) return;
    this.timers.clearTimeout(this.timer);
    this.target = at;
    const delay = Math.min(Math.max(at - this.clock.now().getTime(), 0), MAX_DELAY_MS);
    this.timer = this.timers.setTimeout(() => void this.run(), delay, { unref: true });
  }

  private async run(): Promise<void> {
    this.target = Number.POSITIVE_INFINITY;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    try {
      do {
        this.again = false;
        for (;;) {
          const due = await this.store.listDue(this.clock.now().toISOString(), BATCH);
          for (const record of due) await this.onDue(record);
          if (due.length < BATCH || this.stopped) break;
        }
      } while (this.again && !this.stopped);
      const next = await this.store.nextDueAt();
      if (next) this.note(next);
    } finally {
      this.running = false;
    }
  }

  stop(): void {
    this.stopped = true;
    this.timers.clearTimeout(this.timer);
    this.target = Number.POSITIVE_INFINITY;
  }
}
