/**
 * The relay's background work (deadlines, re-sending commands, webhook delivery, event
 * retention, hosted simulators) runs in the one process that holds the leadership lock
 * (leadership-lock.ts). Taking and losing the lead start and stop its parts, one change
 * at a time.
 */
import type { Logger } from 'pino';

export interface BackgroundPart {
  name: string;
  start(): Promise<void> | void;
  stop(): Promise<void> | void;
}

export class BackgroundWork {
  private chain: Promise<void> = Promise.resolve();
  private running: BackgroundPart[] = [];
  private leading = false;

  constructor(
    private readonly parts: readonly BackgroundPart[],
    private readonly logger: Logger,
  ) {}

  /** Whether this process runs the background work now (for readiness and metrics). */
  get isLeading(): boolean {
    return this.leading;
  }

  lead(): Promise<void> {
    return this.enqueue(async () => {
      if (this.leading) return;
      this.leading = true;
      this.logger.info('leading: background work starts here');
      for (const part of this.parts) {
        try {
          await part.start();
          this.running.push(part);
        } catch (error) {
          this.logger.error({ err: error, part: part.name }, 'background work did not start');
        }
      }
    });
  }

  lose(): Promise<void> {
    return this.enqueue(async () => {
      if (!this.leading) return;
      this.leading = false;
      this.logger.warn('lead lost: background work stops here');
      await this.stopRunning();
    });
  }

  /** Waits for the lead changes asked so far. */
  settled(): Promise<void> {
    return this.chain;
  }

  async stop(): Promise<void> {
    await this.enqueue(async () => {
      this.leading = false;
      await this.stopRunning();
    });
  }

  private async stopRunning(): Promise<void> {
    for (const part of this.running.reverse()) {
      try {
        await part.stop();
      } catch (error) {
        this.logger.error({ err: error, part: part.name }, 'background work did not stop cleanly');
      }
    }
    this.running = [];
  }

  private enqueue(step: () => Promise<void>): Promise<void> {
    this.chain = this.chain.then(step);
    return this.chain;
  }
}
