/**
 * Deletes events older than the retention period, never one an enabled webhook still has
 * to deliver. Runs at start and then every `intervalMs`; readers whose position was
 * deleted get EVENTS_EXPIRED, never a silent gap.
 */
import type { Logger } from 'pino';
import { systemTimers, type Clock, type Timers } from '../../common/clock.js';
import type { Store } from '../store/store.js';

export class EventRetention {
  private timer: unknown;

  constructor(
    private readonly store: Pick<Store, 'trimEvents'>,
    private readonly clock: Clock,
    private readonly retentionMs: number,
    private readonly oldestNeeded: () => Promise<number>,
    private readonly logger: Logger,
    private readonly timers: Timers = systemTimers,
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
    // Each sweep arms the next one before it starts, so sweeps come every `intervalMs`
    // however long one takes, and a sweep never holds up an exit.
    const every = () => {
      this.timer = this.timers.setTimeout(
        () => {
          every();
          void run();
        },
        intervalMs,
        { unref: true },
      );
    };
    void run();
    every();
  }

  stop(): void {
    this.timers.clearTimeout(this.timer);
  }
}
