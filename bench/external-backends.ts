/**
 * What the set-ups at scale run on, made for one phase and removed after it: a fresh
 * PostgreSQL database (from DATABASE_URL) and a Mosquitto of the bench's own, configured
 * as the product needs it (Nagle off). Used by the cluster and fleetcluster phases.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { EXTERNAL_MAX_CONNECTIONS, mosquittoConf } from '../cloud/mqtt/broker-files.js';

export async function freshDatabase(baseUrl: string) {
  const name = `tps_bench_${process.pid}_${Date.now()}`;
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

export interface BenchMosquitto {
  /** Where agents connect. */
  url: string;
  /** Where relays connect: the same listener when anonymous, a listener of their own otherwise. */
  relayUrl: string;
  /** The running Mosquitto's process id (for its RSS and CPU in /proc). */
  pid(): number;
  /** SIGHUP: reads the password file and the ACL again. */
  reload(): void;
  /** SIGTERM, then the same configuration on the same ports; answers once both accept. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export interface MosquittoOptions {
  /**
   * A directory where `tps broker mosquitto` writes `passwd` and `acl`: Mosquitto then
   * runs the configuration that command prints (agents and relays on listeners of their
   * own, each agent signed in with its credential). Without it: anonymous, one listener.
   */
  brokerDir?: string;
  /** Connections the agents' listener takes (the product's configuration says 10,000). */
  maxConnections?: number;
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });

const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.end();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });

function configuration(
  ports: { agents: number; relays: number },
  options: MosquittoOptions,
): string {
  if (!options.brokerDir) {
    return `listener ${ports.agents} 127.0.0.1\nallow_anonymous true\nset_tcp_nodelay true\npersistence false\nmax_queued_messages 100000\n`;
  }
  const conf = mosquittoConf(
    {
      passwordFile: path.join(options.brokerDir, 'passwd'),
      aclFile: path.join(options.brokerDir, 'acl'),
    },
    {
      agents: { port: ports.agents, host: '127.0.0.1' },
      relays: { port: ports.relays, host: '127.0.0.1' },
    },
  );
  const limit = options.maxConnections ?? EXTERNAL_MAX_CONNECTIONS;
  return [
    conf.replace(`max_connections ${EXTERNAL_MAX_CONNECTIONS}`, `max_connections ${limit}`),
    'persistence false',
    'max_queued_messages 100000',
    // Started as root, Mosquitto would read the 0600 files as user 'mosquitto'.
    ...(process.getuid?.() === 0 ? ['user root'] : []),
    '',
  ].join('\n');
}

/** Whether a `mosquitto` binary is on PATH. */
export const hasMosquitto = () => !spawnSync('mosquitto', ['-h']).error;

/** A Mosquitto configured as the product needs it (Nagle off), on free ports; none without the binary. */
export async function startMosquitto(
  options: MosquittoOptions = {},
): Promise<BenchMosquitto | undefined> {
  if (!hasMosquitto()) return undefined;
  const agents = await freePort();
  const relays = options.brokerDir ? await freePort() : agents;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tps-bench-mosquitto-'));
  const conf = path.join(dir, 'mosquitto.conf');
  fs.writeFileSync(conf, configuration({ agents, relays }, options));
  fs.chmodSync(dir, 0o755);
  fs.chmodSync(conf, 0o644);

  let child: ChildProcess;
  const run = async () => {
    child = spawn('mosquitto', ['-c', conf], { stdio: 'ignore' });
    const deadline = performance.now() + 10_000;
    while (!((await accepts(agents)) && (await accepts(relays)))) {
      if (child.exitCode !== null || performance.now() > deadline) {
        throw new Error(`mosquitto did not start on ports ${agents} and ${relays} (${conf})`);
      }
      await sleep(20);
    }
  };
  const exit = async (signal: NodeJS.Signals) => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(signal);
    await exited;
  };
  try {
    await run();
  } catch (error) {
    await exit('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    url: `mqtt://127.0.0.1:${agents}`,
    relayUrl: `mqtt://127.0.0.1:${relays}`,
    pid: () => child.pid ?? 0,
    reload: () => child.kill('SIGHUP'),
    async restart() {
      await exit('SIGTERM');
      await run();
    },
    async stop() {
      await exit('SIGTERM');
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
