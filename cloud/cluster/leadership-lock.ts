/**
 * Which relay process runs the background work (deadlines, re-sending commands, webhook
 * delivery, retention, hosted simulators, see background.ts): the one that holds the
 * leadership lock, one process at a time among those sharing a store.
 */
export interface LeadershipLock {
  /**
   * Starts trying to take the lock, and goes on trying while another process holds it.
   * `onLead` is called when this process takes it; `onLose` when it loses it (its
   * database session dropped), after which it tries again. Called once per lock.
   */
  start(onLead: () => void, onLose: () => void): void;
  /** Stops trying and lets the lock go, for another process to take; no callback after it. */
  stop(): Promise<void>;
}
