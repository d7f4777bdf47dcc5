/** The part of autocannon 9's programmatic API the bench uses (the package ships no types). */
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  interface Options {
    url: string;
    connections?: number;
    duration?: number;
    pipelining?: number;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
  }

  interface Stat {
    average: number;
    mean: number;
    p50: number;
    p99: number;
    max: number;
    total: number;
  }

  interface Result {
    duration: number;
    requests: Stat & { sent: number };
    latency: Stat;
    errors: number;
    timeouts: number;
    non2xx: number;
    '2xx': number;
  }

  /**
   * Emits `response` (client, statusCode, resBytes, responseTimeMs) for each answer,
   * and resolves with the result.
   */
  interface Instance extends EventEmitter, PromiseLike<Result> {
    stop(): void;
  }

  function autocannon(options: Options): Instance;
  export default autocannon;
}
