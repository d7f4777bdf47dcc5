/**
 * `npm run bench`: the bare ceiling, then the relay (each in its own child process)
 * under purchase flows (terminals in process, then agents on the MQTT path in a fleet
 * child, then simulated terminals in process and as agents inside the relay), long-poll
 * wake-ups, events alongside flows, parked long polls and 1,000 connected agents; then the
 * packaged agent's own footprint, and the fleet of 10,000 agents on one relay, then on
 * Mosquitto and two relays on PostgreSQL; then local mode (the agent's local path beside the
 * cloud path, and a backlog forwarded when the link returns). Prints tables only; writes
 * nothing into the repository.
 * docs/performance.md explains the figures.
 */
import { renderAgentFootprint, runAgentFootprint } from './agent-footprint.js';
import { runAgentPath } from './agent-path.js';
import { runAgents } from './agents1000.js';
import { runBareCeiling } from './bare-ceiling.js';
import { runCluster } from './cluster.js';
import { runEvents } from './events.js';
import { probeDisk } from './disk-probe.js';
import { runFleetCluster } from './fleet-cluster.js';
import { renderFleet, renderFleetCluster } from './fleet-report.js';
import { runFleet } from './fleet-scale.js';
import { describeMachine } from './machine.js';
import { USAGE, parseOptions, type BenchOptions, type Phase } from './options.js';
import { renderLocalMode, runLocalMode } from './local-mode.js';
import { runParked } from './parked.js';
import { runPurchaseFlows } from './pos-clients.js';
import { runSimulators } from './simulators.js';
import { renderAgentPath, renderSimulators } from './report-paths.js';
import {
  renderAgents,
  renderBareVsProduct,
  renderCluster,
  renderEvents,
  renderFlowLatencies,
  renderNoise,
  renderParked,
  renderTargets,
  renderWakeup,
  type Results,
} from './report.js';
import { count, ms } from './stats.js';
import { runWakeup } from './wakeup.js';

const log = (text: string) => process.stdout.write(`${text}\n`);

/** The disk flush varies with other work on the machine: probe it before each relay phase. */
function logDisk(): void {
  const { dir, commit } = probeDisk();
  log(
    `disk (${dir}): one SQLite FULL commit p50 ${ms(commit.p50)}, p99 ${ms(commit.p99)}` +
      ` (≈ ${count(1000 / commit.mean)} commits/s one at a time)`,
  );
}

async function phase<T>(name: Phase, options: BenchOptions, run: () => Promise<T>) {
  if (!options.phases.includes(name)) return undefined;
  const started = Date.now();
  log(`\n== ${name} ==`);
  if (name !== 'bare') logDisk();
  try {
    const result = await run();
    log(`(${((Date.now() - started) / 1000).toFixed(1)} s)`);
    return result;
  } catch (error) {
    log(
      `${name} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
    process.exitCode = 1;
    return undefined;
  }
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2), process.env);
  if (options === 'help') {
    process.stdout.write(USAGE);
    return;
  }
  log(
    `terminal-payment-service bench, ${new Date().toISOString()}\n` +
      `${describeMachine()}\n` +
      `phases ${options.phases.join(', ')}; ${options.seconds} s measured after ${options.warmupSeconds} s warm-up`,
  );
  const results: Results = {};

  const bare = await phase('bare', options, () => runBareCeiling(options));
  if (bare) results.bare = bare;

  const flows = await phase('flows', options, () => runPurchaseFlows(options));
  if (flows) {
    results.flows = flows;
    log(renderFlowLatencies(flows));
    if (flows.errors) log(`errors: ${flows.errorKinds}`);
    if (flows.profile) {
      log(`\nCPU profile of the relay over the measured window: ${flows.profile.file}`);
      log(flows.profile.summary);
    }
  }
  if (bare || flows) log(`\n${renderBareVsProduct(results)}`);

  const agentpath = await phase('agentpath', options, () => runAgentPath(options));
  if (agentpath) {
    results.agentpath = agentpath;
    log(renderFlowLatencies(agentpath.flows));
    if (agentpath.flows.errors) log(`errors: ${agentpath.flows.errorKinds}`);
    if (agentpath.flows.profile) {
      log(`\nCPU profile of the relay over the measured window: ${agentpath.flows.profile.file}`);
      log(agentpath.flows.profile.summary);
    }
    log(`\n${renderAgentPath(results.flows, agentpath)}`);
  }

  const simulators = await phase('simulators', options, () => runSimulators(options));
  if (simulators) {
    results.simulators = simulators;
    for (const f of [simulators.inProcess, simulators.agents]) {
      if (f.errors) log(`errors: ${f.errorKinds}`);
      if (f.profile) log(`\nCPU profile of the relay over the measured window: ${f.profile.file}`);
    }
    log(renderSimulators(simulators));
  }

  const wakeup = await phase('wakeup', options, () => runWakeup(options));
  if (wakeup) {
    results.wakeup = wakeup;
    log(renderWakeup(wakeup));
    for (const [name, run] of Object.entries(wakeup.relay)) {
      if (run.errors) log(`errors (relay, ${name}): ${run.errorKinds}`);
    }
    if (wakeup.profile) {
      log(`\nCPU profile of the relay over the measured window: ${wakeup.profile.file}`);
      log(wakeup.profile.summary);
    }
  }

  const events = await phase('events', options, () => runEvents(options));
  if (events) {
    results.events = events;
    log(renderEvents(events));
    for (const w of [events.full, events.paced]) {
      if (w.flowErrors) log(`flow errors: ${w.flowErrorKinds}`);
    }
  }

  const parked = await phase('parked', options, () => runParked(options));
  if (parked) {
    results.parked = parked;
    log(renderParked(parked));
  }

  const agents = await phase('agents1000', options, () => runAgents(options));
  if (agents) {
    results.agents = agents;
    log(renderAgents(agents));
  }

  const cluster = await phase('cluster', options, () => runCluster(options));
  if (cluster) {
    results.cluster = cluster;
    log(renderCluster(cluster));
    for (const f of 'setups' in cluster ? Object.values(cluster.setups) : []) {
      if (f.errors) log(`errors: ${f.errorKinds}`);
    }
  }

  const footprint = await phase('agentfootprint', options, () => runAgentFootprint(options));
  if (footprint) log(renderAgentFootprint(footprint));
  const fleet = await phase('fleet', options, () => runFleet(options));
  if (fleet) log(renderFleet(fleet));
  const fleetCluster = await phase('fleetcluster', options, () => runFleetCluster(options));
  if (fleetCluster) log(renderFleetCluster(fleetCluster));
  const localMode = await phase('localmode', options, () => runLocalMode(options));
  if (localMode) log(renderLocalMode(localMode));

  log(`\n== targets ==\n${renderTargets(results)}`);
  const noise = renderNoise(results);
  if (noise) log(`\n${noise}`);
  log(`\n${describeMachine()}`);
}

main().catch((error: unknown) => {
  process.stderr.write(`bench: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
