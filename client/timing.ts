/**
 * Time and chance, injected wherever the client waits, so that tests of back-off and
 * retries run in microseconds instead of seconds.
 */
export interface Timing {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Resolves after `ms`, or at once when `signal` aborts (it never rejects). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Uniform in [0, 1). */
  random(): number;
}

export const systemTiming: Timing = {
  now: () => Date.now(),
  random: () => Math.random(),
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      if (signal?.aborted || ms <= 0) return resolve();
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
    }),
};
