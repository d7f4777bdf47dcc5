/**
 * The change bus and the leadership lock of the embedded relay: one relay process on its
 * SQLite store (one per data directory, see store/data-dir-lock.ts). No other relay
 * commits or announces, so the bus delivers nothing; none competes for the lead, so the
 * lock is held at once.
 */
import type { ChangeBus } from './change-bus.js';
import type { LeadershipLock } from './leadership-lock.js';

export class EmbeddedChangeBus implements ChangeBus {
  /** Nothing to hear: no other relay shares the store. */
  subscribe(): () => void {
    return () => {};
  }

  /** No one to tell. */
  async announce(): Promise<void> {}

  async close(): Promise<void> {}
}

export class EmbeddedLeadershipLock implements LeadershipLock {
  private stopped = false;

  /** Leads at once (before start returns), and never loses the lead. */
  start(onLead: () => void): void {
    if (!this.stopped) onLead();
  }

  async stop(): Promise<void> {
    this.stopped = true;
  }
}
