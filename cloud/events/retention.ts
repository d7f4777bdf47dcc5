/**
 * Deletes events older than the retention period, never one an enabled webhook still has
 * to deliver. Runs at start and then every `intervalMs`; readers whose position was
 * deleted get EVENTS_EXPIRED, never a silent gap.
 */
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { Store } from '../store/store.js';

export class EventRetention {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly retentionMs: number,
    private readonly oldestNeeded: () => Promise<number>,
    private readonly logger: Logger,
  ) {}

  /** Trims once; answers the position through which events are now deleted. */
  async trim(): Promise<number> {
    const cutoff = new Date(this.clock.now().getTime() - this.retentionMs).toISOString();
    return this.store.trimEvents(cutoff, await this.oldestNeeded());
  }

  start(intervalMs = 3_600_000): void {
    const run = () =>
      this.trim().catch((error: unknown) =>
        this.logger.error({ err: error }, 'event retention failed'),
      );
    void run();
    this.timer = setInterval(run, intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
