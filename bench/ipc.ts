/**
 * The messages between the bench and its child processes (the bare server, the relay).
 * A child reports `ready` once it listens, then answers each request by its id.
 */

/** What a child knows about itself: memory and, for the relay, its parked long polls. */
export interface ProcessSample {
  /** Resident set size now, bytes. */
  rss: number;
  /** Largest RSS seen by the 100 ms sampler since start or the last reset, bytes. */
  peakRss: number;
  heapUsed: number;
  /** CPU time (user + system) used by the process since it started, ms. */
  cpuMs: number;
  /** Open TCP sockets of the process (listening socket included). */
  sockets: number;
  /** Long polls parked on the relay's change feed; absent for the bare server. */
  parked?: number;
}

export type ParentRequest =
  | { id: number; type: 'sample'; resetPeak?: boolean; gc?: boolean }
  | { id: number; type: 'profile-start' }
  /** Stops the CPU profile and writes it (V8 .cpuprofile JSON) to `file`. */
  | { id: number; type: 'profile-stop'; file: string }
  | { id: number; type: 'stop' };

export type ChildMessage =
  | { type: 'ready'; origin: string }
  | { type: 'reply'; id: number; sample?: ProcessSample; error?: string }
  | { type: 'failed'; message: string };
