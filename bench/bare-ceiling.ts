/**
 * Phase 1, the bare ceiling: autocannon against a bare fastify route with a Basic-auth
 * check in a child process. Latencies come from autocannon's per-response times
 * (sub-millisecond), not from its histogram, which rounds to whole milliseconds.
 */
import { randomBytes } from 'node:crypto';
import autocannon from 'autocannon';
import { BenchChild } from './child.js';
import { cpuWindow, type CpuShares } from './machine.js';
import type { BenchOptions } from './options.js';
import { basicAuth } from './pos-api.js';
import { LatencyRecorder, type LatencySummary } from './stats.js';

export interface BareResult {
  seconds: number;
  connections: number;
  requests: number;
  requestsPerSecond: number;
  latency: LatencySummary;
  errors: number;
  peakRss: number;
  cpu: CpuShares;
}

const PATH = '/pos/v1/transaction/get';
/** Made for each run: nothing the bench uses outlives it. */
const CREDENTIAL = { username: 'bench-bare', password: randomBytes(18).toString('base64url') };

export async function runBareCeiling(options: BenchOptions): Promise<BareResult> {
  const authorization = basicAuth(CREDENTIAL);
  const server = await BenchChild.start(new URL('./bare-server.js', import.meta.url), {
    env: { BENCH_BARE_AUTHORIZATION: authorization, BENCH_BARE_PATH: PATH },
  });
  try {
    const load = {
      url: `${server.origin}${PATH}`,
      connections: options.bareConnections,
      method: 'POST',
      headers: { authorization, 'content-type': 'application/json' },
      body: JSON.stringify({ terminal_id: 't-1', external_id: 'order-1' }),
    };
    await autocannon({ ...load, duration: options.warmupSeconds });

    const latencies = new LatencyRecorder();
    await server.sample({ resetPeak: true });
    const window = await cpuWindow(server);
    const instance = autocannon({ ...load, duration: options.seconds });
    instance.on('response', (_client: unknown, _status: number, _bytes: number, time: number) =>
      latencies.record(time),
    );
    const result = await instance;
    const { seconds, cpu, sample } = await window.end();
    return {
      seconds,
      connections: options.bareConnections,
      requests: result['2xx'],
      requestsPerSecond: result['2xx'] / seconds,
      latency: latencies.summary(),
      errors: result.errors + result.timeouts + result.non2xx,
      peakRss: sample.peakRss,
      cpu,
    };
  } finally {
    await server.stop();
  }
}
