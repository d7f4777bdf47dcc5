/**
 * The relay under test, alone in its own process so that its memory is its own: a fresh
 * data directory, port 0, logs at warn. Configured by the bench through TPS_* variables
 * (read by loadCloudConfig); reports its origin, its MQTT broker's address (where agents
 * connect) and its parked long polls over IPC. With BENCH_REPORT_TIMES=1 it also notes
 * when it took in each transaction's result (the relay's diagnostics channel), for the
 * wake-up phase; with BENCH_COUNT_REPORTS=1 it counts the reports it takes in.
 */
import diagnosticsChannel from 'node:diagnostics_channel';
import { loadCloudConfig } from '../cloud/config-settings.js';
import { startRelay } from '../cloud/relay.js';
import { REPORT_TAKEN_CHANNEL, type ReportTaken } from '../cloud/transactions/diagnostics.js';
import { failStart, send, serveParent } from './child-side.js';
import { epochNow } from './pos-api.js';

/** When each transaction's first COMPLETED report was taken in, in epoch ms with µs precision. */
function recordReportTimes(): () => Array<[string, number]> {
  const times = new Map<string, number>();
  diagnosticsChannel.subscribe(REPORT_TAKEN_CHANNEL, (message) => {
    const { report } = message as ReportTaken;
    // The first one made the change; a terminal may send its result again (a re-sent start).
    if (
      report.type === 'transaction' &&
      report.phase === 'COMPLETED' &&
      !times.has(report.transaction_id)
    ) {
      times.set(report.transaction_id, epochNow());
    }
  });
  return () => [...times];
}

/** How many reports (status and transaction) the relay has taken in. */
function countReports(): () => number {
  let taken = 0;
  diagnosticsChannel.subscribe(REPORT_TAKEN_CHANNEL, () => void taken++);
  return () => taken;
}

async function main(): Promise<void> {
  const config = loadCloudConfig(
    {},
    // The relay alone, with simulated terminals inside it, unless a phase asks otherwise.
    { TPS_SIMULATOR_MODE: 'in-process', ...process.env },
    // The broker's port from TPS_MQTT_PORT (0 from bench/relay-child.ts; the fleet phase
    // restarts its relay on the port agents know).
    { host: '127.0.0.1', port: 0, defaultSimulator: false, logLevel: 'warn' },
  );
  const reportTimes = process.env.BENCH_REPORT_TIMES === '1' ? recordReportTimes() : undefined;
  const reportsTaken = process.env.BENCH_COUNT_REPORTS === '1' ? countReports() : undefined;
  const relay = await startRelay(config);
  serveParent({
    parked: () => relay.service.feed.size,
    ...(reportTimes ? { reportTimes } : {}),
    ...(reportsTaken ? { reportsTaken } : {}),
    stop: () => relay.close(),
  });
  // As `tps cloud` does: the fleet phase restarts the relay this way.
  process.once('SIGTERM', () => {
    relay.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
  send({ type: 'ready', origin: new URL(relay.baseUrl).origin, brokerUrl: relay.brokerUrl });
}

main().catch(failStart);
