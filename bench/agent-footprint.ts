/**
 * Phase agentfootprint: the packaged agent as a terminal runs it. The x64 release is built
 * (`packaging/package-agent.ts`) into a temporary update root (`releases/<version>`,
 * `current`) and started as the unit starts it: the release's launcher on the release's own
 * Node.js (`runtime/node`) with the unit's flags, which judges the start and replaces itself
 * with `current/bin/tps-agent.js`; against a relay child, with the emulated reader and the
 * config's defaults. Beside each figure, a floor from the same run on the same Node.js
 * binary with the same flags and the unit's environment: for memory and idle CPU a bare
 * `node -e` that only keeps a timer, for the start a bare mqtt.js client that connects
 * with the same credential.
 * Targets (docs/performance.md): idle RSS ≤ 60 MB, start to connected ≤ 1 s, idle CPU
 * ≤ 0.1 % of a core.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { generateReleaseKeyPair } from '../common/release-signature.js';
import { agentClientId } from '../protocol/mqtt.js';
import type { BenchOptions } from './options.js';
import { basicAuth, type Credential } from './pos-api.js';
import { cpuSecondsOf, rssOf } from './proc-usage.js';
import { startRelayChild } from './relay-child.js';
import { mb, ms, table } from './stats.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const STARTS = 5;
const SETTLE_SECONDS = 30;

export interface FootprintResult {
  releaseBytes: number;
  /** The release's own Node.js (runtime/node): its size and version. */
  runtimeBytes: number;
  runtimeVersion: string;
  bundleBytes: number;
  /** Processes the started agent is, its own and its descendants (1: the launcher gone). */
  agentProcesses: number;
  /** Node's flags from the release's unit, which the agent ran with. */
  nodeFlags: string[];
  /** The unit's `Environment=` settings, which the agent and the floors ran with. */
  unitEnvironment: Record<string, string>;
  /** RSS 5 s after connecting, at the end of the idle window (which starts 35 s after connecting), and after one payment. */
  agentRssEarly: number;
  agentRss: number;
  agentRssAfterPayment: number;
  floorRss: number;
  /** Spawn to CONNACK, one figure per start, sorted. */
  agentConnectMs: number[];
  floorConnectMs: number[];
  idleSeconds: number;
  /** Percent of one core over the idle window. */
  agentIdleCpu: number;
  floorIdleCpu: number;
}

/** The node options of the release's unit: its ExecStart's words between node and the script. */
function unitNodeFlags(release: string): string[] {
  const unit = fs.readFileSync(path.join(release, 'systemd/tps-agent.service'), 'utf8');
  const words = /^ExecStart=(.*)$/m.exec(unit)?.[1]?.split(/\s+/) ?? [];
  // The script is the launcher (/opt/tps-agent/launcher.js) or, before it, the agent's entry.
  const script = words.findIndex((word) => word.endsWith('.js'));
  return words.slice(1, Math.max(1, script));
}

/** The unit's `Environment=` lines (`KEY=value` words; the unit quotes none). */
function unitEnvironment(release: string): Record<string, string> {
  const unit = fs.readFileSync(path.join(release, 'systemd/tps-agent.service'), 'utf8');
  return Object.fromEntries(
    [...unit.matchAll(/^Environment=(.*)$/gm)]
      .flatMap((line) => line[1]!.trim().split(/\s+/))
      .map((word) => [word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)]),
  );
}

/** `pid` and its descendants, from /proc (each thread's list of children). */
function processTree(pid: number): number[] {
  const children = fs
    .readdirSync(`/proc/${pid}/task`)
    .flatMap((task) => fs.readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' '))
    .filter((child) => child.trim() !== '')
    .map(Number);
  return [pid, ...children.flatMap(processTree)];
}

function folderBytes(folder: string): number {
  return fs
    .readdirSync(folder, { recursive: true, encoding: 'utf8' })
    .map((file) => fs.statSync(path.join(folder, file)))
    .filter((stat) => stat.isFile())
    .reduce((sum, stat) => sum + stat.size, 0);
}

/** Spawns `node` and resolves when a stdout line matches, with the ms since spawn. */
async function spawnUntil(
  node: string,
  args: string[],
  cwd: string,
  ready: RegExp,
  env: NodeJS.ProcessEnv = {},
): Promise<{ child: ChildProcess; ms: number }> {
  const started = performance.now();
  const child = spawn(node, args, {
    cwd,
    env: { PATH: process.env.PATH, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`not ready within 20 s: ${args.join(' ')}\n${output.slice(-2000)}`));
    }, 20_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (ready.test(output)) {
        clearTimeout(timer);
        resolve({ child, ms: performance.now() - started });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`exited (${code}) before ready: ${args.join(' ')}\n${output.slice(-2000)}`));
    });
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  await exited;
}

async function buildRelease(work: string): Promise<string> {
  const keyFile = path.join(work, 'release-key.pem');
  fs.writeFileSync(keyFile, generateReleaseKeyPair().privateKeyPem, { mode: 0o600 });
  const out = path.join(work, 'out');
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'packaging/package-agent.ts',
      '--arch',
      'linux-x64',
      '--no-deb',
      '--out',
      out,
      '--key',
      keyFile,
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const code = await new Promise((resolve) => child.once('close', resolve));
  if (code !== 0) throw new Error(`package:agent failed (${code}):\n${output}`);
  const folder = fs.readdirSync(out).find((name) => !name.endsWith('.tar.gz'));
  if (!folder) throw new Error(`package:agent wrote no release folder:\n${output}`);
  // Unpacked outside the project, as on a terminal (no node_modules above it), and laid
  // out as the updater lays releases out: `current` is what the launcher runs.
  const root = path.join(work, 'update');
  const { version } = JSON.parse(
    fs.readFileSync(path.join(out, folder, 'package.json'), 'utf8'),
  ) as { version: string };
  fs.mkdirSync(path.join(root, 'releases'), { recursive: true });
  fs.renameSync(path.join(out, folder), path.join(root, 'releases', version));
  fs.symlinkSync(path.join('releases', version), path.join(root, 'current'));
  return root;
}

export async function runAgentFootprint(options: BenchOptions): Promise<FootprintResult> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-bench-footprint-'));
  const relay = await startRelayChild({ simulatorDelayMs: 20 });
  const running: ChildProcess[] = [];
  try {
    const updateRoot = await buildRelease(work);
    const release = path.join(updateRoot, 'current');
    // The release's own Node.js runs everything measured here, the floors included.
    const node = path.join(release, 'runtime/node');
    const nodeFlags = unitNodeFlags(release);
    const environment = unitEnvironment(release);
    const created = await fetch(`${relay.origin}/pos/v1/terminal/create`, {
      method: 'POST',
      headers: { authorization: basicAuth(relay.account), 'content-type': 'application/json' },
      body: '{}',
    });
    const terminal = (await created.json()) as {
      terminal_id: string;
      username: string;
      password: string;
      agent: { broker_url: string; username: string; password: string };
    };
    const configFile = path.join(work, 'agent.json');
    fs.writeFileSync(
      configFile,
      JSON.stringify({
        terminal_id: terminal.terminal_id,
        broker: {
          url: terminal.agent.broker_url,
          username: terminal.agent.username,
          password: terminal.agent.password,
        },
        reader: { emulated: { state_file: path.join(work, 'reader.jsonl'), delay_ms: 20 } },
        data_dir: path.join(work, 'data'),
      }),
    );
    // As the unit runs it: the launcher with Node's flags, then (same process) the agent.
    const agentArgs = [
      ...nodeFlags,
      'bin/tps-agent-launcher.js',
      '--root',
      updateRoot,
      '--config',
      configFile,
    ];
    const agentReady = /"msg":"connected to the broker"/;
    const agentEnv = { ...environment, TPS_LOG_FORMAT: 'json' };
    const bareClient = `import mqtt from 'mqtt';
mqtt.connect(${JSON.stringify(terminal.agent.broker_url)}, ${JSON.stringify({
      username: terminal.agent.username,
      password: terminal.agent.password,
      clientId: agentClientId(terminal.terminal_id),
    })}).on('connect', () => process.stdout.write('connected\\n'));`;

    const agentConnectMs: number[] = [];
    const floorConnectMs: number[] = [];
    for (let i = 0; i < STARTS; i++) {
      const bare = await spawnUntil(
        node,
        [...nodeFlags, '--input-type=module', '-e', bareClient],
        ROOT,
        /connected/,
        environment,
      );
      floorConnectMs.push(bare.ms);
      await stop(bare.child);
      const agent = await spawnUntil(node, agentArgs, release, agentReady, agentEnv);
      agentConnectMs.push(agent.ms);
      await stop(agent.child);
    }

    const floor = spawn(node, [...nodeFlags, '-e', 'setInterval(() => {}, 1000)'], {
      env: { PATH: process.env.PATH, ...environment },
      stdio: 'ignore',
    });
    running.push(floor);
    const agent = await spawnUntil(node, agentArgs, release, agentReady, agentEnv);
    running.push(agent.child);
    await sleep(5000);
    const agentRssEarly = rssOf(agent.child.pid!);
    // The start's own work settles first: V8's memory reducer collects a few times after
    // allocation stops, and the CPU window is for the steady state.
    await sleep(SETTLE_SECONDS * 1000);
    const idleSeconds = options.footprintIdleSeconds;
    const agentCpu = cpuSecondsOf(agent.child.pid!);
    const floorCpu = cpuSecondsOf(floor.pid!);
    await sleep(idleSeconds * 1000);
    const agentIdleCpu = ((cpuSecondsOf(agent.child.pid!) - agentCpu) / idleSeconds) * 100;
    const floorIdleCpu = ((cpuSecondsOf(floor.pid!) - floorCpu) / idleSeconds) * 100;
    const agentRss = rssOf(agent.child.pid!);
    const floorRss = rssOf(floor.pid!);

    const pos = (operation: string, body: object) =>
      fetch(`${relay.origin}/pos/v1/transaction/${operation}`, {
        method: 'POST',
        headers: {
          authorization: basicAuth({
            username: terminal.username,
            password: terminal.password,
          } satisfies Credential),
          'content-type': 'application/json',
        },
        body: JSON.stringify({ terminal_id: terminal.terminal_id, ...body }),
      }).then((response) => response.json() as Promise<{ transaction?: { state: string } }>);
    const paid = await pos('purchase', {
      external_id: 'footprint-1',
      requested_amount: 1000,
      currency: 'EUR',
      wait_seconds: 10,
    });
    if (paid.transaction?.state !== 'AWAITING_CONFIRM') {
      throw new Error(`the packaged agent did not pay: ${JSON.stringify(paid)}`);
    }
    await pos('confirm', { external_id: 'footprint-1', result_code: 'SUCCESS' });
    await sleep(1000);
    const agentRssAfterPayment = rssOf(agent.child.pid!);

    return {
      releaseBytes: folderBytes(release),
      runtimeBytes: fs.statSync(node).size,
      runtimeVersion: execFileSync(node, ['--version'], { encoding: 'utf8' }).trim(),
      bundleBytes: fs.statSync(path.join(release, 'bin/tps-agent.js')).size,
      nodeFlags,
      unitEnvironment: environment,
      agentProcesses: processTree(agent.child.pid!).length,
      agentRssEarly,
      agentRss,
      agentRssAfterPayment,
      floorRss,
      agentConnectMs: agentConnectMs.sort((a, b) => a - b),
      floorConnectMs: floorConnectMs.sort((a, b) => a - b),
      idleSeconds,
      agentIdleCpu,
      floorIdleCpu,
    };
  } finally {
    for (const child of running) await stop(child);
    await relay.dispose();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

const median = (sorted: number[]) => sorted[Math.floor(sorted.length / 2)] ?? NaN;
const percent = (v: number) => `${v.toFixed(3)} %`;

export function renderAgentFootprint(f: FootprintResult): string {
  return [
    `release ${mb(f.releaseBytes)} unpacked (Node.js ${f.runtimeVersion} ${mb(f.runtimeBytes)}, bundle ${mb(f.bundleBytes)}); its node ${f.nodeFlags.join(' ') || '(no flags)'} with ${
      Object.entries(f.unitEnvironment)
        .map(([key, value]) => `${key}=${value}`)
        .join(' ') || 'no environment'
    }, as the unit runs it; ${f.agentProcesses} process(es)`,
    table([
      ['measure', 'packaged agent', 'floor', 'target', 'floor is'],
      ['RSS 5 s after connecting', mb(f.agentRssEarly), '', '', ''],
      [
        `idle RSS, connected ${SETTLE_SECONDS + 5 + f.idleSeconds} s`,
        mb(f.agentRss),
        mb(f.floorRss),
        '≤ 60 MB',
        'the release’s `node -e` with a timer',
      ],
      ['the agent’s own (idle RSS − floor)', mb(f.agentRss - f.floorRss), '', '', ''],
      ['RSS after one payment', mb(f.agentRssAfterPayment), mb(f.floorRss), '', ''],
      [
        `start to connected, median of ${f.agentConnectMs.length} (max)`,
        `${ms(median(f.agentConnectMs))} (${ms(f.agentConnectMs.at(-1) ?? NaN)})`,
        `${ms(median(f.floorConnectMs))} (${ms(f.floorConnectMs.at(-1) ?? NaN)})`,
        '≤ 1 s',
        'bare mqtt.js client on the release’s node',
      ],
      [
        `idle CPU over ${f.idleSeconds} s from ${SETTLE_SECONDS + 5} s (one core)`,
        percent(f.agentIdleCpu),
        percent(f.floorIdleCpu),
        '≤ 0.1 %',
        'the release’s `node -e` with a timer',
      ],
    ]),
  ].join('\n');
}
