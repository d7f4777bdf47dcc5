/**
 * The agent fleet: real terminal agents (agent/agent.ts) with emulated card-reader
 * firmware on in-memory serial lines, in a process of their own so that the relay's CPU
 * and memory stay its own. Asked over IPC, it registers terminals with
 * `POST /pos/v1/terminal/create` (the account credential), then starts one agent per
 * terminal at a ramp, each signed in to the relay's broker with its own credential, as in
 * the field. Samples report how many agents have their MQTT link up.
 *
 * Set by the parent (bench/fleet-child.ts): BENCH_FLEET_ORIGIN (the relay's API),
 * BENCH_FLEET_BROKER_URL, BENCH_FLEET_USERNAME / BENCH_FLEET_PASSWORD (the account) and
 * BENCH_FLEET_DIR (the agents' data directories; the parent removes it).
 */
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { Pool } from 'undici';
import { AgentConfigSchema } from '../agent/config.js';
import { startAgent, type RunningAgent } from '../agent/agent.js';
import { emulatedReader, type EmulatedReader } from '../agent/emulated-reader.js';
import type { TerminalCreateResponse } from '../protocol/index.js';
import { failStart, send, serveParent } from './child-side.js';
import type { FleetConnectOptions, FleetReply, FleetRequest, FleetTerminal } from './ipc.js';
import { basicAuth, postJson } from './pos-api.js';
import { ErrorTally } from './stats.js';

function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} must be set`);
  return value;
}

interface Running {
  agent: RunningAgent;
  reader: EmulatedReader;
}

async function main(): Promise<void> {
  const origin = required('BENCH_FLEET_ORIGIN');
  const brokerUrl = required('BENCH_FLEET_BROKER_URL');
  const dir = required('BENCH_FLEET_DIR');
  const account = {
    username: required('BENCH_FLEET_USERNAME'),
    password: required('BENCH_FLEET_PASSWORD'),
  };

  // Every agent logs at warn into one tally: reconnects and refusals show up in the report.
  const warnings = new ErrorTally();
  const logger = pino(
    { level: 'warn' },
    {
      write(line: string) {
        try {
          const { msg } = JSON.parse(line) as { msg?: string };
          warnings.add(msg ?? 'log line without msg');
        } catch {
          warnings.add('unparsable log line');
        }
      },
    },
  );

  const registered: Array<TerminalCreateResponse> = [];
  const running: Running[] = [];
  let pool: Pool | undefined;

  async function register(count: number, concurrency: number): Promise<FleetReply> {
    pool ??= new Pool(origin, { connections: Math.max(1, concurrency), pipelining: 1 });
    const authorization = basicAuth(account);
    const started = performance.now();
    const fresh = new Array<TerminalCreateResponse>(count);
    let next = 0;
    const worker = async () => {
      while (next < count) {
        const slot = next++;
        const answer = await postJson<TerminalCreateResponse>(
          pool!,
          '/pos/v1/terminal/create',
          authorization,
          {},
        );
        if (answer.status !== 200 || !answer.body) {
          throw new Error(`terminal/create answered ${answer.status}`);
        }
        fresh[slot] = answer.body;
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
    registered.push(...fresh);
    const terminals: FleetTerminal[] = fresh.map((t) => ({
      terminal_id: t.terminal_id,
      username: t.username,
      password: t.password,
    }));
    return { ms: performance.now() - started, terminals };
  }

  async function startOne(terminal: TerminalCreateResponse, index: number, o: FleetConnectOptions) {
    const dataDir = path.join(dir, terminal.terminal_id);
    fs.mkdirSync(dataDir, { recursive: true });
    // The reader's memory stays in this process (the default): nothing here outlives the run.
    const reader = emulatedReader({ delayMs: o.delayMs, serial: index + 1, battery: false });
    const config = AgentConfigSchema.parse({
      terminal_id: terminal.terminal_id,
      broker: {
        url: brokerUrl,
        username: terminal.agent.username,
        password: terminal.agent.password,
      },
      reader: { emulated: { state_file: path.join(dataDir, 'reader.jsonl'), delay_ms: o.delayMs } },
      printer: { type: 'none' },
      data_dir: dataDir,
      heartbeat_s: o.heartbeatS,
      log_level: 'warn',
    });
    const agent = await startAgent(config, {
      reader: reader.reader,
      logger: logger.child({ terminalId: terminal.terminal_id }),
    });
    running.push({ agent, reader });
  }

  /** Starts the agents not started yet, `ratePerSecond` of them a second. */
  async function connect(options: FleetConnectOptions): Promise<FleetReply> {
    const started = performance.now();
    const interval = 1000 / Math.max(1, options.ratePerSecond);
    const first = running.length;
    for (let i = first; i < registered.length; i++) {
      const due = started + (i - first) * interval;
      const ahead = due - performance.now();
      if (ahead > 1) await sleep(ahead);
      await startOne(registered[i]!, i, options);
    }
    return { ms: performance.now() - started };
  }

  serveParent({
    agents: () => ({
      started: running.length,
      connected: running.filter((r) => r.agent.link.connected).length,
      warnings: warnings.describe(),
    }),
    fleet: (request: FleetRequest) =>
      request.type === 'fleet-register'
        ? register(request.count, request.concurrency)
        : connect(request.options),
    stop: async () => {
      await Promise.allSettled(
        running.map(async ({ agent, reader }) => {
          await agent.stop();
          await reader.close();
        }),
      );
      await pool?.close();
    },
  });
  send({ type: 'ready', origin });
}

main().catch(failStart);
